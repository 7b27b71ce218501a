export { ProcessorError, type ProcessorErrorCode } from './errors.js';
export { ERNIE_PROCESSOR, GRANITE_PROCESSOR, PROCESSOR_FAMILIES } from './families/index.js';
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
export {
  DEFAULT_MAX_IMAGE_BYTES,
  DEFAULT_MAX_PIXELS,
  type DecodeOptions,
  decodeImage,
  type ImageBitmapLike,
  type ImageDataLike,
  type ImageSource,
  type RgbImage,
} from './image/decode.js';
export {
  type ErnieImageInputs,
  type ErnieImageProcessorConfig,
  ernieImageProcessorConfig,
  ernieSmartResize,
  processErnieImages,
} from './image/ernie.js';
export { rgbaToRgb } from './image/image-header.js';
export { OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, type PixelNormalization } from './image/pixels.js';
export { PIL_RESAMPLE_CODES, type ResampleFilter, resize, type Uint8Image } from './image/resize.js';
export type { ByteSource, ModelFiles } from './model-files.js';
export { type ImageInput, type ProcessChatOptions, Processor, type ProcessorCallInputs } from './processor.js';
export {
  checkImageProcessorType,
  chooseProcessorFamily,
  type MediaInputs,
  type ProcessorFamily,
  type ProcessorFolder,
  type ProcessorOutputs,
  type ProcessorRules,
  type ProcessorTensor,
  type VideoInput,
} from './processor-family.js';
export * from './qwen3vl/index.js';
export {
  type ApplyChatTemplateOptions,
  type ChatMessage,
  ChatTemplate,
  type ChatTemplateOptions,
  type ContentPart,
  DEFAULT_TEMPLATE_LIMITS,
  type TemplateLimits,
} from './text/chat-template.js';
export { IncrementalDetokenizer, type IncrementalDetokenizerOptions } from './text/detokenizer.js';
export {
  ernieImageTokenCount,
  ernieVideoTokenCount,
  expandPlaceholders,
  type GraniteTokenCountConfig,
  graniteImageTokenCount,
  mmTokenTypeIds,
  moeMmTokenTypeIds,
  type PlaceholderExpansion,
} from './text/placeholders.js';
export {
  parseTokenizerConfig,
  Tokenizer,
  type TokenizerConfig,
  type TokenizerDecodeOptions,
  type TokenizerEncodeOptions,
  type TokenizerOptions,
} from './text/tokenizer.js';
export type { TokenizerBackend, TokenizerBackendFactory, TokenizerJson } from './text/tokenizer-backend.js';
export { jsTokenizerBackend } from './text/tokenizer-js.js';
export {
  DEFAULT_MAX_VIDEO_BYTES,
  DEFAULT_MAX_VIDEO_PIXELS,
  type DecodedVideo,
  type DecodeVideoOptions,
  decodeVideo,
  type VideoInfo,
} from './video/decode.js';
export {
  type ErnieVideoInputs,
  type ErnieVideoProcessorConfig,
  ernieSampleFrameIndices,
  ernieVideoProcessorConfig,
  processErnieVideos,
  type VideoFrames,
  type VideoSampling,
} from './video/ernie.js';
export { torchResizeBicubicUint8 } from './video/torch-resize.js';
