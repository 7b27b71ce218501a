export { ProcessorError, type ProcessorErrorCode } from './errors.js';
export { DEFAULT_MAX_PIXELS, type DecodeOptions, decodeImage, type RgbImage } from './image/decode.js';
export { PIL_RESAMPLE_CODES, type ResampleFilter, resize, type Uint8Image } from './image/resize.js';
