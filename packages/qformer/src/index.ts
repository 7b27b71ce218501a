// @vlmkit/qformer: the BLIP-2 Q-Former encoder and Granite 4 Vision's window Q-Former projectors as ONNX subgraphs.
export { QFormerError, type QFormerErrorCode } from './errors.js';
export {
  BLIP2_QFORMER_DEFAULTS,
  type Blip2QFormerConfig,
  type QFormerActivation,
  qformerFromHfConfig,
  validateQFormerConfig,
} from './qformer-config.js';
export {
  type FromHfConfigOptions,
  type WindowQFormerConfig,
  derivedQFormer,
  fromHfConfig,
  parseDownsampleRate,
  validateWindowQFormerConfig,
  windowGeometry,
} from './window-config.js';
export { type ParameterSpec, expectedParameters, qformerExpectedParameters } from './parameters.js';
export {
  type Blip2QFormerInputs,
  type Blip2QFormerOptions,
  type Blip2QFormerOutputs,
  QFORMER_IO,
  buildBlip2QFormer,
  buildBlip2QFormerModel,
} from './qformer.js';
export {
  type DownsampleMode,
  type WindowQFormerInputs,
  type WindowQFormerOptions,
  type WindowQFormerOutputs,
  WINDOW_QFORMER_IO,
  buildWindowQFormerDownsampler,
  buildWindowQFormerDownsamplerModel,
} from './window-qformer.js';
