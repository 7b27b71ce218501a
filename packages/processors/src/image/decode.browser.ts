// The browser's image decoder (platform.browser.ts): the page's own decoders for JPEG, PNG and WebP
// through createImageBitmap, read back unpremultiplied, then image-header.ts's RGBA -> RGB and
// exif-orientation.ts's turn. What a browser decodes otherwise than Pillow is refused by name before
// decoding. Runs only in a page (examples/web's harness checks its pixels against Node's); what it
// relies on is tested in Node.
import { ProcessorError } from '../errors.js';
import type { ImageBitmapLike } from './decode.js';
import { exifOrientation, jpegExif, orient, withoutExif } from './exif-orientation.js';
import { checkImagePixels, readImageHeader, rgbaToRgb } from './image-header.js';
import { checkExifHeader, checkPngChunks, checkWebpChunks } from './pillow-checks.js';
import { decodePng16 } from './png16.js';
import type { RgbImage } from './rgb-image.js';

// The few DOM types used here (the package compiles without the DOM library).
interface Gl {
  readonly TEXTURE_2D: number;
  readonly RGBA: number;
  readonly RGBA8: number;
  readonly UNSIGNED_BYTE: number;
  readonly FRAMEBUFFER: number;
  readonly COLOR_ATTACHMENT0: number;
  readonly FRAMEBUFFER_COMPLETE: number;
  readonly UNPACK_PREMULTIPLY_ALPHA_WEBGL: number;
  readonly UNPACK_COLORSPACE_CONVERSION_WEBGL: number;
  readonly UNPACK_FLIP_Y_WEBGL: number;
  readonly PACK_ALIGNMENT: number;
  readonly MAX_TEXTURE_SIZE: number;
  readonly NONE: number;
  readonly NO_ERROR: number;
  isContextLost(): boolean;
  getParameter(p: number): unknown;
  createTexture(): unknown;
  bindTexture(target: number, t: unknown): void;
  pixelStorei(p: number, v: number | boolean): void;
  texImage2D(t: number, level: number, internal: number, format: number, type: number, source: unknown): void;
  createFramebuffer(): unknown;
  bindFramebuffer(target: number, fb: unknown): void;
  framebufferTexture2D(target: number, attachment: number, t: number, tex: unknown, level: number): void;
  checkFramebufferStatus(target: number): number;
  readPixels(x: number, y: number, w: number, h: number, format: number, type: number, out: Uint8Array): void;
  deleteTexture(t: unknown): void;
  deleteFramebuffer(fb: unknown): void;
  getError(): number;
}
interface Canvas2d {
  drawImage(image: unknown, x: number, y: number): void;
  getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray };
}
interface Page {
  createImageBitmap?(blob: Blob, options: Record<string, string>): Promise<ImageBitmapLike>;
  OffscreenCanvas?: new (w: number, h: number) => { getContext(kind: string, options?: object): unknown };
}
const page = globalThis as unknown as Page;

/**
 * An image file's bytes (not GIF: decode.ts decodes GIF itself) decoded by the browser as Pillow decodes
 * it for HF's load_image: no colour management (PIL ignores the ICC profile), alpha kept unpremultiplied
 * so that dropping it gives the stored colours, then EXIF orientation applied here (exif_transpose) on the
 * pixels of the bytes without their EXIF block (Chromium orients JPEG and PNG itself but not WebP).
 */
export async function decodeImageBytes(bytes: Uint8Array, name: string, maxPixels: number): Promise<RgbImage> {
  const header = readImageHeader(bytes);
  if (header === undefined) {
    throw new ProcessorError('NOT_AN_IMAGE', `${name}: not a JPEG, PNG, WebP or GIF image (or its header is cut short).`);
  }
  const refuse = (why: string) =>
    new ProcessorError('UNSUPPORTED_PLATFORM', `${name}: ${why}; convert it to a PNG first (or process it in Node).`);
  if (header.format === 'tiff') throw refuse('a TIFF image, which browsers do not decode');
  if (header.jpegComponents === 4) throw refuse("a CMYK JPEG, which browsers convert to RGB otherwise than Pillow's cmyk2rgb");
  if (header.format === 'png') checkPngChunks(bytes, name);
  if (header.format === 'webp') checkWebpChunks(bytes, name);
  if (header.format === 'png' || header.format === 'webp') checkExifHeader(header.exif, name);
  checkImagePixels(name, header.width, header.height, maxPixels);
  // Pillow clips 16-bit grey to 255 and keeps the high byte of 16-bit colour; browsers scale: decoded here.
  if (header.png?.depth === 16) return orient(await decodePng16(bytes, name), exifOrientation(header.exif));
  if (page.createImageBitmap === undefined)
    throw new ProcessorError('UNSUPPORTED_PLATFORM', `${name}: this platform has no createImageBitmap`);
  const format = header.format;
  const exif = format === 'jpeg' ? jpegExif(bytes) : header.exif;
  const stored = format === 'gif' ? bytes : withoutExif(bytes, format);
  let bitmap: ImageBitmapLike;
  try {
    bitmap = await page.createImageBitmap(new Blob([stored as Uint8Array<ArrayBuffer>]), {
      imageOrientation: 'from-image',
      colorSpaceConversion: 'none',
      premultiplyAlpha: 'none',
    });
  } catch (e) {
    throw new ProcessorError('NOT_AN_IMAGE', `${name}: the browser cannot decode this ${format} image: ${(e as Error).message}`, {
      cause: e,
    });
  }
  try {
    const rgb = rgbaToRgb({ width: bitmap.width, height: bitmap.height, data: readBitmap(bitmap, name) });
    return orient(rgb, exifOrientation(exif));
  } finally {
    bitmap.close();
  }
}

/** An ImageBitmap the page made: its pixels as they are (how it was decoded was the page's choice). */
export async function decodeImageBitmap(bitmap: ImageBitmapLike, name: string, maxPixels: number): Promise<RgbImage> {
  checkImagePixels(name, bitmap.width, bitmap.height, maxPixels);
  return rgbaToRgb({ width: bitmap.width, height: bitmap.height, data: readBitmap(bitmap, name) });
}

/**
 * The bitmap's RGBA bytes, top row first. WebGL reads them unpremultiplied (a 2D canvas stores
 * premultiplied colour, which loses the colour of translucent pixels); a 2D canvas is used only where
 * WebGL is missing or the image is over its texture size, and then only for an image with no
 * translucent pixel (where it is exact).
 */
function readBitmap(bitmap: ImageBitmapLike, name: string): Uint8Array {
  const { width, height } = bitmap;
  if (page.OffscreenCanvas === undefined) throw new ProcessorError('UNSUPPORTED_PLATFORM', `${name}: this platform has no OffscreenCanvas`);
  const gl = webgl();
  if (gl !== undefined && Math.max(width, height) <= (gl.getParameter(gl.MAX_TEXTURE_SIZE) as number)) {
    const out = readWithWebGl(gl, bitmap);
    if (out !== undefined) return out;
  }
  const ctx = new page.OffscreenCanvas(width, height).getContext('2d') as Canvas2d | null;
  if (ctx === null)
    throw new ProcessorError('UNSUPPORTED_PLATFORM', `${name}: neither WebGL 2 nor a 2D canvas is available to read the pixels`);
  ctx.drawImage(bitmap, 0, 0);
  const { data } = ctx.getImageData(0, 0, width, height);
  for (let i = 3; i < data.length; i += 4) {
    if (data[i] !== 255) {
      throw new ProcessorError(
        'UNSUPPORTED_PLATFORM',
        `${name}: a ${width}x${height} image with transparency and no WebGL 2 to read it exactly (a 2D canvas premultiplies alpha); ` +
          'use a smaller image or one without alpha.',
      );
    }
  }
  return new Uint8Array(data.buffer, data.byteOffset, data.length);
}

let context: Gl | null | undefined;

/** One WebGL 2 context for every image (a page may hold only a few); a lost one is made again. */
function webgl(): Gl | undefined {
  if (context === undefined || context?.isContextLost()) context = new page.OffscreenCanvas!(1, 1).getContext('webgl2') as Gl | null;
  return context ?? undefined;
}

function readWithWebGl(gl: Gl, bitmap: ImageBitmapLike): Uint8Array | undefined {
  const texture = gl.createTexture();
  const framebuffer = gl.createFramebuffer();
  try {
    gl.bindTexture(gl.TEXTURE_2D, texture);
    gl.pixelStorei(gl.UNPACK_PREMULTIPLY_ALPHA_WEBGL, false);
    gl.pixelStorei(gl.UNPACK_COLORSPACE_CONVERSION_WEBGL, gl.NONE);
    gl.pixelStorei(gl.UNPACK_FLIP_Y_WEBGL, false);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, gl.RGBA, gl.UNSIGNED_BYTE, bitmap);
    gl.bindFramebuffer(gl.FRAMEBUFFER, framebuffer);
    gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0, gl.TEXTURE_2D, texture, 0);
    if (gl.checkFramebufferStatus(gl.FRAMEBUFFER) !== gl.FRAMEBUFFER_COMPLETE) return undefined;
    const out = new Uint8Array(bitmap.width * bitmap.height * 4);
    gl.pixelStorei(gl.PACK_ALIGNMENT, 1);
    // A texture's first row is the image's top row (no flip on upload), and readPixels starts at row 0.
    gl.readPixels(0, 0, bitmap.width, bitmap.height, gl.RGBA, gl.UNSIGNED_BYTE, out);
    return gl.getError() === gl.NO_ERROR ? out : undefined;
  } finally {
    gl.deleteFramebuffer(framebuffer);
    gl.deleteTexture(texture);
  }
}
