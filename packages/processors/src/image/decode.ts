import sharp, { type Metadata, type Sharp } from 'sharp';
import { ProcessorError } from '../errors.js';
import { type InputKind, readRegularFile } from '../input-file.js';
import { decodeGifFrame, isGif, parseGif } from './gif.js';
import { checkExifHeader, checkPngChunks } from './pillow-checks.js';
import type { RgbImage } from './rgb-image.js';

export type { RgbImage } from './rgb-image.js';

/**
 * PIL's decompression-bomb limit (`Image.MAX_IMAGE_PIXELS * 2`): above it
 * `Image.open` raises DecompressionBombError, so HF refuses these images too.
 */
export const DEFAULT_MAX_PIXELS = 2 * 89_478_485;

/** The largest image file read (256 MiB): a file past it is refused before it is read. */
export const DEFAULT_MAX_IMAGE_BYTES = 256 * 1024 * 1024;

/** How long sharp may take to decode one image before it is refused (libvips' own timeout). */
const DECODE_TIMEOUT_SECONDS = 60;

/** The formats whose decoding matches Pillow's: sharp's for these, GIF decoded here (gif.ts). */
const SHARP_FORMATS = new Set(['jpeg', 'png', 'webp', 'tiff']);

const IMAGE_FILE: InputKind = { what: 'image', unreadable: 'NOT_AN_IMAGE', tooLarge: 'IMAGE_TOO_LARGE', option: 'maxBytes' };

export interface DecodeOptions {
  /** Refuse images with more pixels than this (IMAGE_TOO_LARGE) before decoding them; default DEFAULT_MAX_PIXELS. */
  maxPixels?: number;
  /** Refuse image files (and bytes) larger than this (IMAGE_TOO_LARGE) before reading them; default DEFAULT_MAX_IMAGE_BYTES. */
  maxBytes?: number;
  /** What to call the image in errors when `input` is bytes (a path names itself). */
  name?: string;
}

/**
 * Decodes an image file as HF's `load_image` does with Pillow:
 * `ImageOps.exif_transpose(Image.open(f)).convert("RGB")`. sharp decodes JPEG,
 * PNG, WebP and TIFF (its decoders give PIL's pixels byte for byte when no
 * colour management runs, so the embedded ICC profile is ignored as PIL
 * ignores it); GIF is decoded here as Pillow does (gif.ts: sharp gives
 * transparent pixels as black where Pillow keeps the palette colour). Then the
 * mode conversion follows Pillow's Convert.c:
 *
 * - RGBA, LA, PA: alpha is dropped, not composited (`rgba2rgb` copies R, G, B);
 * - L, LA, 1: the grey value is copied to R, G and B (`l2rgb`);
 * - P (with or without transparency): the palette colour, transparency ignored;
 * - I;16 (16-bit grey PNG/TIFF): values clipped to 255 (`I16_RGB`), not scaled;
 *   16-bit RGB/RGBA/LA: the high byte (PIL's `RGB;16B` raw mode);
 * - CMYK (JPEG): `cmyk2rgb`, R = 255 - K - C * (255 - K) / 255 rounded, no ICC.
 *
 * Other formats sharp reads are refused by name (UNSUPPORTED_IMAGE): SVG (Pillow
 * cannot open it) and AVIF / HEIF (sharp's AV1 decoding differs from Pillow's).
 * A path must name a regular file of at most `maxBytes` (a FIFO, a device or a
 * directory is refused without being opened), and the pixel count is checked
 * against `maxPixels` from the header, before any pixel is decoded.
 */
export async function decodeImage(input: string | Uint8Array, options: DecodeOptions = {}): Promise<RgbImage> {
  const image = await decodePixels(input, options);
  const name = typeof input === 'string' ? input : options.name;
  return name === undefined ? image : { ...image, name };
}

async function decodePixels(input: string | Uint8Array, options: DecodeOptions): Promise<RgbImage> {
  const name = typeof input === 'string' ? input : (options.name ?? 'image bytes');
  const maxPixels = options.maxPixels ?? DEFAULT_MAX_PIXELS;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_IMAGE_BYTES;
  const bytes = typeof input === 'string' ? await readRegularFile(input, maxBytes, IMAGE_FILE) : input;
  if (bytes.length > maxBytes) {
    throw new ProcessorError(
      'IMAGE_TOO_LARGE',
      `${name}: ${bytes.length} bytes, over the limit of ${maxBytes} for image files; use a smaller image or raise maxBytes.`,
    );
  }
  const checkPixels = (width: number, height: number) => {
    const pixels = width * height;
    if (pixels > maxPixels) {
      throw new ProcessorError(
        'IMAGE_TOO_LARGE',
        `${name}: ${width}x${height} is ${pixels} pixels, more than the limit of ${maxPixels}; ` +
          'downscale the image first or raise maxPixels.',
      );
    }
  };
  if (isGif(bytes)) {
    const frame = parseGif(bytes, name);
    checkPixels(frame.width, frame.height);
    return decodeGifFrame(bytes, frame, name);
  }
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (e) {
    throw new ProcessorError('NOT_AN_IMAGE', `${name}: not an image sharp can decode (JPEG, PNG, WebP, GIF, TIFF): ${firstLine(e)}`, {
      cause: e,
    });
  }
  if (!SHARP_FORMATS.has(meta.format)) throw unsupportedFormat(name, meta);
  if (meta.format === 'png') checkPngChunks(bytes, name);
  if (meta.format === 'png' || meta.format === 'webp') checkExifHeader(meta.exif, name);
  checkPixels(meta.width, meta.height);
  if (meta.depth !== 'uchar' && meta.depth !== 'ushort') {
    throw new ProcessorError(
      'UNSUPPORTED_IMAGE',
      `${name}: ${meta.depth} samples are not supported; convert the image to 8-bit (or 16-bit) RGB first.`,
    );
  }
  try {
    // PIL opens 16-bit greyscale (no alpha) as mode I;16 and clips it to 255 in convert('RGB').
    if (meta.space === 'cmyk') return await decodeCmyk(bytes, maxPixels);
    if (meta.depth === 'ushort' && meta.channels === 1) return await decodeGrey16(bytes, maxPixels);
    const { data, info } = await open(bytes, maxPixels).raw().toBuffer({ resolveWithObject: true });
    return toRgb(data, info.width, info.height, info.channels);
  } catch (e) {
    if (e instanceof ProcessorError) throw e;
    throw new ProcessorError('NOT_AN_IMAGE', `${name}: decoding failed: ${firstLine(e)}`, { cause: e });
  }
}

/** libvips repeats a warning once per line it meets it on: the first says it. */
function firstLine(e: unknown): string {
  return String((e as Error).message).split('\n')[0]!;
}

function unsupportedFormat(name: string, meta: Metadata): ProcessorError {
  const why =
    meta.format === 'svg'
      ? 'an SVG drawing, which HF cannot open (Pillow reads no SVG)'
      : meta.format === 'heif'
        ? `${meta.compression === 'av1' ? 'an AVIF' : 'a HEIF'} image, whose decoded pixels differ from Pillow's`
        : `a ${meta.format} image, a format whose decoding is not checked against Pillow's`;
  return new ProcessorError(
    'UNSUPPORTED_IMAGE',
    `${name}: ${why}; convert it to PNG (lossless) first. Supported: JPEG, PNG, WebP, GIF, TIFF.`,
  );
}

/** sharp with PIL's view of the file: no colour management, EXIF orientation applied (exif_transpose). */
function open(bytes: Uint8Array, maxPixels: number): Sharp {
  // The header was checked against maxPixels already; libvips' own limit backs that up while decoding.
  const limitInputPixels = Number.isSafeInteger(maxPixels) ? maxPixels : false;
  return sharp(bytes, { ignoreIcc: true, limitInputPixels }).autoOrient().timeout({ seconds: DECODE_TIMEOUT_SECONDS });
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
async function decodeGrey16(bytes: Uint8Array, maxPixels: number): Promise<RgbImage> {
  const { data, info } = await open(bytes, maxPixels)
    .toColourspace('grey16')
    .raw({ depth: 'ushort' })
    .toBuffer({ resolveWithObject: true });
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
async function decodeCmyk(bytes: Uint8Array, maxPixels: number): Promise<RgbImage> {
  const { data, info } = await open(bytes, maxPixels)
    .pipelineColourspace('cmyk')
    .toColourspace('cmyk')
    .raw()
    .toBuffer({ resolveWithObject: true });
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
