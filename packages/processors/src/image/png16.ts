// 16-bit PNG decoded in JavaScript for the browser, whose own decoders reduce 16 bits to 8 by scaling
// where Pillow (HF's load_image) clips 16-bit grey to 255 (mode I;16, convert("RGB")) and keeps the high
// byte of 16-bit colour (raw modes RGB;16B, LA;16B, RGBA;16B). The zlib stream is inflated by
// DecompressionStream (browsers and Node alike); unfiltering and Adam7 follow the PNG specification.
import { ProcessorError } from '../errors.js';
import type { RgbImage } from './rgb-image.js';

/** Samples per pixel for PNG colour types 0 (grey), 2 (RGB), 4 (grey + alpha), 6 (RGBA). */
const CHANNELS: Readonly<Record<number, number>> = { 0: 1, 2: 3, 4: 2, 6: 4 };

/** Adam7 passes: x0, y0, dx, dy. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/** A 16-bit PNG (colour type 0, 2, 4 or 6; chunks checked by checkPngChunks before) as Pillow's convert("RGB") gives it. */
export async function decodePng16(bytes: Uint8Array, name: string): Promise<RgbImage> {
  const broken = (what: string) => new ProcessorError('NOT_AN_IMAGE', `${name}: a broken PNG (${what}).`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const width = view.getUint32(16);
  const height = view.getUint32(20);
  const colorType = bytes[25]!;
  const interlaced = bytes[28] === 1;
  const channels = CHANNELS[colorType];
  if (bytes[24] !== 16 || channels === undefined) throw broken(`bit depth ${bytes[24]}, colour type ${colorType} is not a 16-bit PNG`);
  const idat: Uint8Array[] = [];
  for (let pos = 8; pos + 12 <= bytes.length; ) {
    const length = view.getUint32(pos);
    const type = String.fromCharCode(...bytes.subarray(pos + 4, pos + 8));
    if (type === 'IDAT') idat.push(bytes.subarray(pos + 8, pos + 8 + length));
    if (type === 'IEND') break;
    pos += 12 + length;
  }
  const bpp = channels * 2;
  const passes = interlaced
    ? ADAM7.map(([x0, y0, dx, dy]) => ({ x0, y0, dx, dy, w: Math.ceil((width - x0) / dx), h: Math.ceil((height - y0) / dy) }))
    : [{ x0: 0, y0: 0, dx: 1, dy: 1, w: width, h: height }];
  const expected = passes.reduce((n, p) => n + (p.w > 0 && p.h > 0 ? p.h * (1 + p.w * bpp) : 0), 0);
  const raw = await inflate(idat, expected, broken);
  const out = new Uint8Array(width * height * 3);
  let at = 0;
  for (const p of passes) {
    if (p.w <= 0 || p.h <= 0) continue;
    const stride = p.w * bpp;
    let prev = new Uint8Array(stride);
    for (let y = 0; y < p.h; y++) {
      const filter = raw[at]!;
      const row = raw.slice(at + 1, at + 1 + stride);
      at += 1 + stride;
      unfilter(filter, row, prev, bpp, broken);
      for (let x = 0; x < p.w; x++) {
        const d = (((p.y0 + y * p.dy) * width + p.x0 + x * p.dx) * 3) | 0;
        const s = x * bpp;
        if (channels <= 2) {
          const grey = colorType === 0 ? Math.min((row[s]! << 8) | row[s + 1]!, 255) : row[s]!;
          out[d] = out[d + 1] = out[d + 2] = grey;
        } else {
          out[d] = row[s]!;
          out[d + 1] = row[s + 2]!;
          out[d + 2] = row[s + 4]!;
        }
      }
      prev = row;
    }
  }
  return { width, height, data: out };
}

/** The IDAT stream inflated, refused when it holds less than the image needs (more is not read). */
async function inflate(idat: Uint8Array[], expected: number, broken: (what: string) => ProcessorError): Promise<Uint8Array> {
  const out = new Uint8Array(expected);
  let n = 0;
  const stream = new Blob(idat as Uint8Array<ArrayBuffer>[]).stream().pipeThrough(new DecompressionStream('deflate'));
  const reader = stream.getReader();
  try {
    while (n < expected) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.length, expected - n);
      out.set(value.subarray(0, take), n);
      n += take;
    }
  } catch (e) {
    throw broken(`the image data does not inflate: ${(e as Error).message}`);
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  if (n < expected) throw broken(`the image data ends after ${n} of ${expected} bytes`);
  return out;
}

/** PNG filter types 0-4 (None, Sub, Up, Average, Paeth), undone in place. */
function unfilter(filter: number, row: Uint8Array, prev: Uint8Array, bpp: number, broken: (what: string) => ProcessorError): void {
  const n = row.length;
  switch (filter) {
    case 0:
      return;
    case 1:
      for (let i = bpp; i < n; i++) row[i] = (row[i]! + row[i - bpp]!) & 0xff;
      return;
    case 2:
      for (let i = 0; i < n; i++) row[i] = (row[i]! + prev[i]!) & 0xff;
      return;
    case 3:
      for (let i = 0; i < n; i++) row[i] = (row[i]! + (((i >= bpp ? row[i - bpp]! : 0) + prev[i]!) >> 1)) & 0xff;
      return;
    case 4:
      for (let i = 0; i < n; i++) {
        const a = i >= bpp ? row[i - bpp]! : 0;
        const b = prev[i]!;
        const c = i >= bpp ? prev[i - bpp]! : 0;
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        row[i] = (row[i]! + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c)) & 0xff;
      }
      return;
    default:
      throw broken(`row filter type ${filter}`);
  }
}
