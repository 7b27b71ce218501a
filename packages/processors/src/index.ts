export { ProcessorError, type ProcessorErrorCode } from './errors.js';
export {
  type AnyresImageInputs,
  type AnyresImageProcessorConfig,
  anyresImageProcessorConfig,
  anyresTiles,
  patchOutputSize,
  processAnyresImages,
  type Size,
  type SizeSpec,
  selectBestResolution,
} from './image/anyres.js';
export { DEFAULT_MAX_PIXELS, type DecodeOptions, decodeImage, type RgbImage } from './image/decode.js';
export {
  type ErnieImageInputs,
  type ErnieImageProcessorConfig,
  ernieImageProcessorConfig,
  ernieSmartResize,
  processErnieImages,
} from './image/ernie.js';
export { OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, type PixelNormalization } from './image/pixels.js';
export { PIL_RESAMPLE_CODES, type ResampleFilter, resize, type Uint8Image } from './image/resize.js';
