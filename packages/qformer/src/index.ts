// @vlmkit/qformer: the BLIP-2 Q-Former encoder and Granite 4 Vision's window Q-Former projectors as ONNX subgraphs.
export { QFormerError, type QFormerErrorCode } from './errors.js';
export { expectedParameters, type ParameterSpec, qformerExpectedParameters } from './parameters.js';
export {
  type Blip2QFormerInputs,
  type Blip2QFormerOptions,
  type Blip2QFormerOutputs,
  buildBlip2QFormer,
  buildBlip2QFormerModel,
  QFORMER_INPUTS,
  QFORMER_IO,
} from './qformer.js';
export {
  BLIP2_QFORMER_DEFAULTS,
  type Blip2QFormerConfig,
  type QFormerActivation,
  qformerFromHfConfig,
  validateQFormerConfig,
} from './qformer-config.js';
export {
  derivedQFormer,
  type FromHfConfigOptions,
  fromHfConfig,
  parseDownsampleRate,
  validateWindowQFormerConfig,
  type WindowQFormerConfig,
  windowGeometry,
  windowQFormerConfigFromFields,
} from './window-config.js';
export {
  buildWindowQFormerDownsampler,
  buildWindowQFormerDownsamplerModel,
  type DownsampleMode,
  WINDOW_QFORMER_INPUTS,
  WINDOW_QFORMER_IO,
  type WindowQFormerInputs,
  type WindowQFormerOptions,
  type WindowQFormerOutputs,
} from './window-qformer.js';
