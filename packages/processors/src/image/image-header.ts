// What the browser decoder needs to know before it decodes (format, size, EXIF block, the layouts whose
// browser decoding differs from Pillow's) and the one step after it (RGBA -> RGB). Pure functions over
// bytes, so that Node tests them against sharp on the same files (image-header.test.ts).
import { ProcessorError } from '../errors.js';
import type { RgbImage } from './rgb-image.js';

/** RGBA pixels as the browser gives them (`ImageData`: row-major, 4 bytes a pixel, alpha not premultiplied). */
export interface ImageDataLike {
  readonly width: number;
  readonly height: number;
  readonly data: Uint8ClampedArray | Uint8Array;
}

export interface ImageHeader {
  readonly format: 'jpeg' | 'png' | 'webp' | 'gif' | 'tiff';
  readonly width: number;
  readonly height: number;
  /** PNG bit depth (1, 2, 4, 8, 16) and colour type (0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA). */
  readonly png?: { readonly depth: number; readonly colorType: number };
  /** JPEG: the frame's component count (4: CMYK / YCCK). */
  readonly jpegComponents?: number;
  /** The EXIF block as stored (PNG eXIf, WebP EXIF), for checkExifHeader; JPEG's is not read here. */
  readonly exif?: Uint8Array;
}

const ascii = (b: Uint8Array, at: number, n: number) => String.fromCharCode(...b.subarray(at, at + n));

/** The format and size from the header bytes; undefined when the bytes are none of JPEG, PNG, WebP, GIF, TIFF or are cut short. */
export function readImageHeader(b: Uint8Array): ImageHeader | undefined {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length >= 24 && ascii(b, 0, 8) === '\x89PNG\r\n\x1a\n' && ascii(b, 12, 4) === 'IHDR') {
    return {
      format: 'png',
      width: view.getUint32(16),
      height: view.getUint32(20),
      png: { depth: b[24]!, colorType: b[25]! },
      ...pngExif(b, view),
    };
  }
  if (b.length >= 10 && (ascii(b, 0, 6) === 'GIF87a' || ascii(b, 0, 6) === 'GIF89a')) {
    return { format: 'gif', width: view.getUint16(6, true), height: view.getUint16(8, true) };
  }
  if (b.length >= 4 && (ascii(b, 0, 4) === 'II*\x00' || ascii(b, 0, 4) === 'MM\x00*')) return { format: 'tiff', width: 0, height: 0 };
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return jpegHeader(b, view);
  if (b.length >= 30 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 4) === 'WEBP') return webpHeader(b, view);
  return undefined;
}

function pngExif(b: Uint8Array, view: DataView): { exif?: Uint8Array } {
  for (let pos = 8; pos + 8 <= b.length; ) {
    const length = view.getUint32(pos);
    const type = ascii(b, pos + 4, 4);
    if (type === 'eXIf') return { exif: b.subarray(pos + 8, Math.min(b.length, pos + 8 + length)) };
    if (type === 'IDAT' || type === 'IEND') break;
    pos += 12 + length;
  }
  return {};
}

/** The first SOFn marker's size and components (ITU T.81 B.2.2). */
function jpegHeader(b: Uint8Array, view: DataView): ImageHeader | undefined {
  let pos = 2;
  while (pos + 4 <= b.length) {
    if (b[pos] !== 0xff) {
      pos++; // libjpeg (Pillow's, and browsers') skips stray bytes before a marker
      continue;
    }
    const marker = b[pos + 1]!;
    if (marker === 0xff) {
      pos++; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      pos += 2;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) return undefined; // scan or end before any frame header
    const length = view.getUint16(pos + 2);
    const sof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (sof) {
      if (pos + 10 > b.length) return undefined;
      return { format: 'jpeg', height: view.getUint16(pos + 5), width: view.getUint16(pos + 7), jpegComponents: b[pos + 9]! };
    }
    pos += 2 + length;
  }
  return undefined;
}

/** RIFF chunks: VP8 (lossy), VP8L (lossless) or VP8X (extended: canvas size, then an EXIF chunk). */
function webpHeader(b: Uint8Array, view: DataView): ImageHeader | undefined {
  const type = ascii(b, 12, 4);
  if (type === 'VP8 ' && b[23] === 0x9d && b[24] === 0x01 && b[25] === 0x2a) {
    return { format: 'webp', width: view.getUint16(26, true) & 0x3fff, height: view.getUint16(28, true) & 0x3fff };
  }
  if (type === 'VP8L' && b[20] === 0x2f) {
    const bits = view.getUint32(21, true);
    return { format: 'webp', width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (type === 'VP8X') {
    const u24 = (at: number) => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
    let exif: Uint8Array | undefined;
    for (let pos = 12; pos + 8 <= b.length; ) {
      const size = view.getUint32(pos + 4, true);
      if (ascii(b, pos, 4) === 'EXIF' && exif === undefined) exif = b.subarray(pos + 8, Math.min(b.length, pos + 8 + size));
      pos += 8 + size + (size & 1);
    }
    return { format: 'webp', width: u24(24) + 1, height: u24(27) + 1, ...(exif === undefined ? {} : { exif }) };
  }
  return undefined;
}

/** Refuses an image of more than `maxPixels` pixels (IMAGE_TOO_LARGE), before it is decoded. */
export function checkImagePixels(name: string, width: number, height: number, maxPixels: number): void {
  const pixels = width * height;
  if (pixels > maxPixels) {
    throw new ProcessorError(
      'IMAGE_TOO_LARGE',
      `${name}: ${width}x${height} is ${pixels} pixels, more than the limit of ${maxPixels}; ` +
        'downscale the image first or raise maxPixels.',
    );
  }
}

/**
 * RGBA -> RGB as Pillow's `convert("RGB")` does for RGBA, LA and PA (rgba2rgb: alpha dropped, not
 * composited). A browser decoding with `premultiplyAlpha: 'none'` gives grey as R = G = B and a palette
 * as its colours, so this one step covers what Node's decoder does per mode.
 */
export function rgbaToRgb(image: ImageDataLike): RgbImage {
  const { width, height, data } = image;
  const n = width * height;
  if (!Number.isSafeInteger(n) || data.length !== n * 4) {
    throw new ProcessorError('NOT_AN_IMAGE', `RGBA pixels of a ${width}x${height} image need ${n * 4} bytes; got ${data.length}`);
  }
  const out = new Uint8Array(n * 3);
  for (let i = 0, j = 0; i < n * 4; i += 4, j += 3) {
    out[j] = data[i]!;
    out[j + 1] = data[i + 1]!;
    out[j + 2] = data[i + 2]!;
  }
  return { width, height, data: out };
}
