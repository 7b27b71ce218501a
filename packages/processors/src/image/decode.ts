import { readFile } from 'node:fs/promises';
import sharp, { type Metadata, type Sharp } from 'sharp';
import { ProcessorError } from '../errors.js';

/** An 8-bit RGB image, pixels row-major and channels interleaved (`data.length === width * height * 3`). */
export interface RgbImage {
  readonly width: number;
  readonly height: number;
  readonly data: Uint8Array;
}

/**
 * PIL's decompression-bomb limit (`Image.MAX_IMAGE_PIXELS * 2`): above it
 * `Image.open` raises DecompressionBombError, so HF refuses these images too.
 */
export const DEFAULT_MAX_PIXELS = 2 * 89_478_485;

export interface DecodeOptions {
  /** Refuse images with more pixels than this (IMAGE_TOO_LARGE); default DEFAULT_MAX_PIXELS. */
  maxPixels?: number;
  /** What to call the image in errors when `input` is bytes (a path names itself). */
  name?: string;
}

/**
 * Decodes an image file as HF's `load_image` does with Pillow:
 * `ImageOps.exif_transpose(Image.open(f)).convert("RGB")`. sharp decodes
 * (its JPEG, PNG, WebP, GIF and TIFF decoders give PIL's pixels byte for byte
 * when no colour management runs, so the embedded ICC profile is ignored as PIL
 * ignores it), then the mode conversion follows Pillow's Convert.c:
 *
 * - RGBA, LA, PA: alpha is dropped, not composited (`rgba2rgb` copies R, G, B);
 * - L, LA, 1: the grey value is copied to R, G and B (`l2rgb`);
 * - P (with or without transparency): the palette colour, transparency ignored;
 * - I;16 (16-bit grey PNG/TIFF): values clipped to 255 (`I16_RGB`), not scaled;
 *   16-bit RGB/RGBA/LA: the high byte (PIL's `RGB;16B` raw mode);
 * - CMYK (JPEG): `cmyk2rgb`, R = 255 - K - C * (255 - K) / 255 rounded, no ICC.
 */
export async function decodeImage(input: string | Uint8Array, options: DecodeOptions = {}): Promise<RgbImage> {
  const name = typeof input === 'string' ? input : (options.name ?? 'image bytes');
  const maxPixels = options.maxPixels ?? DEFAULT_MAX_PIXELS;
  let bytes: Uint8Array;
  try {
    bytes = typeof input === 'string' ? await readFile(input) : input;
  } catch (e) {
    throw new ProcessorError('NOT_AN_IMAGE', `${name}: cannot read the file (${(e as Error).message}).`, { cause: e });
  }
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (e) {
    throw new ProcessorError(
      'NOT_AN_IMAGE',
      `${name}: not an image sharp can decode (JPEG, PNG, WebP, GIF, TIFF, AVIF): ${(e as Error).message}`,
      { cause: e },
    );
  }
  const pixels = meta.width * meta.height;
  if (pixels > maxPixels) {
    throw new ProcessorError(
      'IMAGE_TOO_LARGE',
      `${name}: ${meta.width}x${meta.height} is ${pixels} pixels, more than the limit of ${maxPixels}; ` +
        'downscale the image first or raise maxPixels.',
    );
  }
  if (meta.depth !== 'uchar' && meta.depth !== 'ushort') {
    throw new ProcessorError(
      'UNSUPPORTED_IMAGE',
      `${name}: ${meta.depth} samples are not supported; convert the image to 8-bit (or 16-bit) RGB first.`,
    );
  }
  try {
    // PIL opens 16-bit greyscale (no alpha) as mode I;16 and clips it to 255 in convert('RGB').
    if (meta.space === 'cmyk') return await decodeCmyk(bytes);
    if (meta.depth === 'ushort' && meta.channels === 1) return await decodeGrey16(bytes);
    const { data, info } = await open(bytes).raw().toBuffer({ resolveWithObject: true });
    return toRgb(data, info.width, info.height, info.channels);
  } catch (e) {
    if (e instanceof ProcessorError) throw e;
    throw new ProcessorError('NOT_AN_IMAGE', `${name}: decoding failed: ${(e as Error).message}`, { cause: e });
  }
}

/** sharp with PIL's view of the file: no colour management, EXIF orientation applied (exif_transpose). */
function open(bytes: Uint8Array): Sharp {
  return sharp(bytes, { ignoreIcc: true, limitInputPixels: false }).autoOrient();
}

/** Channels as sharp returns them (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA) -> RGB, alpha dropped. */
function toRgb(data: Uint8Array, width: number, height: number, channels: number): RgbImage {
  const n = width * height;
  if (channels === 3) return { width, height, data: new Uint8Array(data.buffer, data.byteOffset, n * 3) };
  const out = new Uint8Array(n * 3);
  for (let i = 0; i < n; i++) {
    const src = i * channels;
    if (channels >= 3) {
      out[i * 3] = data[src]!;
      out[i * 3 + 1] = data[src + 1]!;
      out[i * 3 + 2] = data[src + 2]!;
    } else {
      out[i * 3] = out[i * 3 + 1] = out[i * 3 + 2] = data[src]!;
    }
  }
  return { width, height, data: out };
}

/** Pillow Convert.c I16_RGB: each 16-bit grey value clipped to 255. */
async function decodeGrey16(bytes: Uint8Array): Promise<RgbImage> {
  const { data, info } = await open(bytes).toColourspace('grey16').raw({ depth: 'ushort' }).toBuffer({ resolveWithObject: true });
  const grey = new Uint16Array(data.buffer, data.byteOffset, data.length / 2);
  const n = info.width * info.height;
  const out = new Uint8Array(n * 3);
  for (let i = 0; i < n; i++) {
    const v = Math.min(grey[i * info.channels]!, 255);
    out[i * 3] = out[i * 3 + 1] = out[i * 3 + 2] = v;
  }
  return { width: info.width, height: info.height, data: out };
}

/** The decoded CMYK samples (sharp keeps them when the pipeline stays in CMYK), then Pillow's cmyk2rgb. */
async function decodeCmyk(bytes: Uint8Array): Promise<RgbImage> {
  const { data, info } = await open(bytes).pipelineColourspace('cmyk').toColourspace('cmyk').raw().toBuffer({ resolveWithObject: true });
  const n = info.width * info.height;
  const out = new Uint8Array(n * 3);
  const muldiv255 = (a: number, b: number) => {
    const t = a * b + 128;
    return ((t >> 8) + t) >> 8;
  };
  for (let i = 0; i < n; i++) {
    const nk = 255 - data[i * 4 + 3]!;
    for (let c = 0; c < 3; c++) out[i * 3 + c] = Math.max(0, nk - muldiv255(data[i * 4 + c]!, nk));
  }
  return { width: info.width, height: info.height, data: out };
}
