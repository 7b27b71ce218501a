// Everything of this package that needs Node: files by path, sharp, HF's Rust tokenizer, node-av. The
// browser's counterparts are in platform.browser.ts; the rest of the package imports `#platform` only.
import { ProcessorError } from './errors.js';
import type { ImageBitmapLike } from './image/decode.js';
import type { RgbImage } from './image/rgb-image.js';

export { decodeImageBytes, readImageFile } from './image/decode.node.js';
export { processorDirFiles } from './model-files.node.js';
export { rustTokenizerBackend as defaultTokenizerBackend } from './text/tokenizer-rust.node.js';
export { decodeVideoFile } from './video/decode.node.js';

/** An ImageBitmap exists in browsers only. */
export async function decodeImageBitmap(_bitmap: ImageBitmapLike, name: string, _maxPixels: number): Promise<RgbImage> {
  throw new ProcessorError(
    'UNSUPPORTED_PLATFORM',
    `${name}: an ImageBitmap is a browser object; in Node pass the image file's path or bytes.`,
  );
}
