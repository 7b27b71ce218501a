// EXIF orientation as Pillow's ImageOps.exif_transpose applies it (HF load_image), done here rather than by
// the browser: Chromium applies a JPEG's or PNG's orientation but not a WebP's (examples/web's check, and
// a scratch run on the decode fixtures), and browsers need not agree. The browser decoder strips the EXIF
// block from the bytes, decodes the stored pixels, and turns them with `orient`.
import type { RgbImage } from './rgb-image.js';

/** The first EXIF block of a JPEG (APP1 "Exif\0\0", as Pillow's JPEG reader keeps the first), undefined if none. */
export function jpegExif(b: Uint8Array): Uint8Array | undefined {
  for (const s of jpegSegments(b)) if (s.marker === 0xe1 && isExif(b, s.start + 4)) return b.subarray(s.start + 4, s.end);
  return undefined;
}

const isExif = (b: Uint8Array, at: number) => String.fromCharCode(...b.subarray(at, at + 6)) === 'Exif\x00\x00';

/** The JPEG's marker segments before the scan: [start, end) including the marker and length bytes. */
function jpegSegments(b: Uint8Array): { marker: number; start: number; end: number }[] {
  const out: { marker: number; start: number; end: number }[] = [];
  let pos = 2;
  while (pos + 4 <= b.length) {
    if (b[pos] !== 0xff) {
      pos++; // stray bytes before a marker, skipped as libjpeg skips them
      continue;
    }
    const marker = b[pos + 1]!;
    if (marker === 0xff) {
      pos++;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) break;
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      pos += 2;
      continue;
    }
    const end = pos + 2 + ((b[pos + 2]! << 8) | b[pos + 3]!);
    out.push({ marker, start: pos, end: Math.min(end, b.length) });
    pos = end;
  }
  return out;
}

/**
 * The orientation tag (0x0112) of IFD0 of an EXIF block (an optional "Exif\0\0" prefix, then TIFF), as
 * Pillow's Image.getexif reads it; 1 when absent or not a single SHORT/LONG in 1..8 (exif_transpose then
 * does nothing).
 */
export function exifOrientation(exif: Uint8Array | undefined): number {
  if (exif === undefined) return 1;
  let t = exif;
  while (t.length >= 6 && isExif(t, 0)) t = t.subarray(6);
  if (t.length < 8) return 1;
  const view = new DataView(t.buffer, t.byteOffset, t.byteLength);
  // TiffImagePlugin.PREFIXES without BigTIFF: anything else is no EXIF to Pillow (a JPEG's is then ignored).
  const prefix = String.fromCharCode(...t.subarray(0, 4));
  if (!['MM\x00\x2a', 'II\x2a\x00', 'MM\x2a\x00', 'II\x00\x2a'].includes(prefix)) return 1;
  const le = prefix.startsWith('II');
  const ifd = view.getUint32(4, le);
  if (ifd + 2 > t.length) return 1;
  const count = view.getUint16(ifd, le);
  for (let i = 0; i < count; i++) {
    const e = ifd + 2 + i * 12;
    if (e + 12 > t.length) return 1;
    if (view.getUint16(e, le) !== 0x0112) continue;
    const type = view.getUint16(e + 2, le);
    if (view.getUint32(e + 4, le) !== 1) return 1;
    const v = type === 3 ? view.getUint16(e + 8, le) : type === 4 ? view.getUint32(e + 8, le) : 0;
    return v >= 1 && v <= 8 ? v : 1;
  }
  return 1;
}

/**
 * The bytes without their EXIF block(s), so that no decoder orients the pixels itself. For JPEG every APP1
 * segment goes (EXIF, XMP: metadata only): Chromium takes an APP1 whose "Exif\0\0" is damaged as EXIF
 * where Pillow reads none (a fuzzed copy of exif2.jpg showed it).
 */
export function withoutExif(b: Uint8Array, format: 'jpeg' | 'png' | 'webp'): Uint8Array {
  const keep: [number, number][] = [];
  if (format === 'jpeg') {
    let from = 0;
    for (const s of jpegSegments(b)) {
      if (s.marker !== 0xe1) continue;
      keep.push([from, s.start]);
      from = s.end;
    }
    keep.push([from, b.length]);
    return concat(b, keep);
  }
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const type = (at: number) => String.fromCharCode(...b.subarray(at, at + 4));
  if (format === 'png') {
    let from = 0;
    for (let pos = 8; pos + 12 <= b.length; ) {
      const end = pos + 12 + view.getUint32(pos);
      if (type(pos + 4) === 'eXIf') {
        keep.push([from, pos]);
        from = end;
      }
      if (type(pos + 4) === 'IEND') break;
      pos = end;
    }
    keep.push([from, b.length]);
    return concat(b, keep);
  }
  // WebP: drop EXIF chunks, fix the RIFF size and the VP8X "has EXIF" flag.
  let from = 0;
  for (let pos = 12; pos + 8 <= b.length; ) {
    const size = view.getUint32(pos + 4, true);
    const end = pos + 8 + size + (size & 1);
    if (type(pos) === 'EXIF') {
      keep.push([from, pos]);
      from = end;
    }
    pos = end;
  }
  keep.push([from, b.length]);
  const out = concat(b, keep);
  new DataView(out.buffer).setUint32(4, out.length - 8, true);
  if (type(12) === 'VP8X') out[20] = out[20]! & ~0x08;
  return out;
}

function concat(b: Uint8Array, ranges: [number, number][]): Uint8Array {
  const out = new Uint8Array(ranges.reduce((n, [s, e]) => n + Math.max(0, e - s), 0));
  let at = 0;
  for (const [s, e] of ranges) {
    if (e <= s) continue;
    out.set(b.subarray(s, e), at);
    at += e - s;
  }
  return out;
}

/**
 * exif_transpose's transposition for an orientation: 2 FLIP_LEFT_RIGHT, 3 ROTATE_180, 4 FLIP_TOP_BOTTOM,
 * 5 TRANSPOSE, 6 ROTATE_270, 7 TRANSVERSE, 8 ROTATE_90; 1 (or anything else) as is.
 */
export function orient(image: RgbImage, orientation: number): RgbImage {
  if (orientation < 2 || orientation > 8) return image;
  const { width: w, height: h, data } = image;
  const swap = orientation >= 5;
  const W = swap ? h : w;
  const H = swap ? w : h;
  const sources: ((x: number, y: number) => [number, number])[] = [
    (x, y) => [w - 1 - x, y],
    (x, y) => [w - 1 - x, h - 1 - y],
    (x, y) => [x, h - 1 - y],
    (x, y) => [y, x],
    (x, y) => [y, h - 1 - x],
    (x, y) => [w - 1 - y, h - 1 - x],
    (x, y) => [w - 1 - y, x],
  ];
  const source = sources[orientation - 2]!;
  const out = new Uint8Array(data.length);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const [sx, sy] = source(x, y);
      const s = (sy * w + sx) * 3;
      const d = (y * W + x) * 3;
      out[d] = data[s]!;
      out[d + 1] = data[s + 1]!;
      out[d + 2] = data[s + 2]!;
    }
  }
  return { width: W, height: H, data: out };
}
