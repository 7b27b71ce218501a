// Node's image decoder: sharp (libvips) for JPEG, PNG, WebP and TIFF, with Pillow's view of the pixels
// (decode.ts says which); platform.node.ts hands it to decodeImage.
import sharp, { type Metadata, type Sharp } from 'sharp';
import { ProcessorError } from '../errors.js';
import { type InputKind, readRegularFile } from '../input-file.node.js';
import { checkImagePixels } from './image-header.js';
import { checkExifHeader, checkPngChunks } from './pillow-checks.js';
import type { RgbImage } from './rgb-image.js';

/** How long sharp may take to decode one image before it is refused (libvips' own timeout). */
const DECODE_TIMEOUT_SECONDS = 60;

/** The formats whose decoding matches Pillow's: sharp's for these, GIF decoded here (gif.ts). */
const SHARP_FORMATS = new Set(['jpeg', 'png', 'webp', 'tiff']);

const IMAGE_FILE: InputKind = { what: 'image', unreadable: 'NOT_AN_IMAGE', tooLarge: 'IMAGE_TOO_LARGE', option: 'maxBytes' };

/** An image file's bytes: a regular file of at most `maxBytes` (input-file.node.ts). */
export function readImageFile(path: string, maxBytes: number): Promise<Uint8Array> {
  return readRegularFile(path, maxBytes, IMAGE_FILE);
}

/** Decodes the bytes of a JPEG, PNG, WebP or TIFF file with sharp (GIF is decoded by decode.ts before). */
export async function decodeImageBytes(bytes: Uint8Array, name: string, maxPixels: number): Promise<RgbImage> {
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
  checkImagePixels(name, meta.width, meta.height, maxPixels);
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
