import { decodeImageBitmap, decodeImageBytes, readImageFile } from '#platform';
import { ProcessorError } from '../errors.js';
import { decodeGifFrame, isGif, parseGif } from './gif.js';
import { checkImagePixels, type ImageDataLike, rgbaToRgb } from './image-header.js';
import { DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_PIXELS } from './limits.js';
import type { RgbImage } from './rgb-image.js';

export type { ImageDataLike } from './image-header.js';
export { DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_PIXELS } from './limits.js';
export type { RgbImage } from './rgb-image.js';

/** A browser `ImageBitmap` (decoded by the page already): its size, and `close`. */
export interface ImageBitmapLike {
  readonly width: number;
  readonly height: number;
  close(): void;
}

/**
 * What decodeImage takes: a file path (Node), the file's bytes or a `Blob`/`File`, RGBA pixels
 * (`ImageData`), or an `ImageBitmap` (browser).
 */
export type ImageSource = string | Uint8Array | Blob | ImageDataLike | ImageBitmapLike;

export interface DecodeOptions {
  /** Refuse images with more pixels than this (IMAGE_TOO_LARGE) before decoding them; default DEFAULT_MAX_PIXELS. */
  maxPixels?: number;
  /** Refuse image files (and bytes) larger than this (IMAGE_TOO_LARGE) before reading them; default DEFAULT_MAX_IMAGE_BYTES. */
  maxBytes?: number;
  /** What to call the image in errors when `input` is not a path (a path names itself, a File its name). */
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
 *
 * That is Node. In the browser (platform.browser.ts) a path is refused (UNSUPPORTED_PLATFORM): pass a
 * `Blob`/`File`, bytes, an `ImageData` or an `ImageBitmap`; the browser decodes JPEG, PNG and WebP
 * (createImageBitmap, EXIF orientation applied, no colour conversion, alpha not premultiplied), GIF is
 * decoded here as in Node, and what the browser cannot decode as Pillow does (16-bit PNG, CMYK JPEG,
 * TIFF) is refused by name. An `ImageData` (RGBA) has its alpha dropped as Pillow's convert("RGB") does.
 */
export async function decodeImage(input: ImageSource, options: DecodeOptions = {}): Promise<RgbImage> {
  const image = await decodePixels(input, options);
  const name = typeof input === 'string' ? input : (options.name ?? fileName(input));
  return name === undefined ? image : { ...image, name };
}

function fileName(input: ImageSource): string | undefined {
  const name = (input as { name?: unknown }).name;
  return typeof Blob !== 'undefined' && input instanceof Blob && typeof name === 'string' ? name : undefined;
}

/** RGBA pixels (an `ImageData`): `data` is a Uint8ClampedArray of width * height * 4 bytes. */
export function isImageData(input: unknown): input is ImageDataLike {
  const data = (input as { data?: unknown } | null)?.data;
  return data instanceof Uint8ClampedArray;
}

async function decodePixels(input: ImageSource, options: DecodeOptions): Promise<RgbImage> {
  const name = typeof input === 'string' ? input : (options.name ?? fileName(input) ?? 'image bytes');
  const maxPixels = options.maxPixels ?? DEFAULT_MAX_PIXELS;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_IMAGE_BYTES;
  if (isImageData(input)) {
    checkImagePixels(name, input.width, input.height, maxPixels);
    return rgbaToRgb(input);
  }
  let bytes: Uint8Array;
  if (typeof input === 'string') bytes = await readImageFile(input, maxBytes);
  else if (input instanceof Uint8Array) bytes = input;
  else if (typeof Blob !== 'undefined' && input instanceof Blob) {
    if (input.size > maxBytes) throw tooManyBytes(name, input.size, maxBytes);
    bytes = new Uint8Array(await input.arrayBuffer());
  } else return decodeImageBitmap(input as ImageBitmapLike, name, maxPixels);
  if (bytes.length > maxBytes) throw tooManyBytes(name, bytes.length, maxBytes);
  if (isGif(bytes)) {
    const frame = parseGif(bytes, name);
    checkImagePixels(name, frame.width, frame.height, maxPixels);
    return decodeGifFrame(bytes, frame, name);
  }
  return decodeImageBytes(bytes, name, maxPixels);
}

function tooManyBytes(name: string, size: number, maxBytes: number): ProcessorError {
  return new ProcessorError(
    'IMAGE_TOO_LARGE',
    `${name}: ${size} bytes, over the limit of ${maxBytes} for image files; use a smaller image or raise maxBytes.`,
  );
}
