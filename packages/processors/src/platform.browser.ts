// The browser's side of `#platform` (package.json "imports"): no file paths, no native addons. Typed
// against platform.node.ts so that the two cannot drift; what a page cannot do throws
// UNSUPPORTED_PLATFORM saying what to pass instead.
import { ProcessorError } from './errors.js';
import { decodeImageBitmap as bitmap, decodeImageBytes as bytes } from './image/decode.browser.js';
import type * as NodePlatform from './platform.node.js';
import { jsTokenizerBackend } from './text/tokenizer-js.js';

export const decodeImageBytes: typeof NodePlatform.decodeImageBytes = bytes;
export const decodeImageBitmap: typeof NodePlatform.decodeImageBitmap = bitmap;

export const defaultTokenizerBackend: typeof NodePlatform.defaultTokenizerBackend = jsTokenizerBackend;

export const processorDirFiles: typeof NodePlatform.processorDirFiles = (dir) => {
  throw new ProcessorError(
    'UNSUPPORTED_PLATFORM',
    `${dir}: a directory path cannot be read in the browser; pass ModelFiles instead (urlFiles(baseUrl) or blobFiles(pickedFiles) ` +
      'from @vlmkit/safetensors).',
  );
};

export const readImageFile: typeof NodePlatform.readImageFile = async (path) => {
  throw new ProcessorError(
    'UNSUPPORTED_PLATFORM',
    `${path}: an image path cannot be read in the browser; pass the image as a Blob/File, bytes, ImageData or ImageBitmap.`,
  );
};

export const decodeVideoFile: typeof NodePlatform.decodeVideoFile = async (path) => {
  throw new ProcessorError(
    'UNSUPPORTED_PLATFORM',
    `${path}: videos are not decoded in the browser yet (Node decodes them with FFmpeg); pass decoded frames instead: ` +
      '`{ frames: [{ width, height, data }], fps }` with 8-bit RGB frames.',
  );
};
