// @vlmkit/resampler: ERNIE-4.5-VL's variable-resolution resampler (vision tower output -> text embeddings) as an ONNX subgraph.
export { ResamplerError, type ResamplerErrorCode } from './errors.js';
export { type ErnieResamplerConfig, fromHfConfig, validateResamplerConfig } from './config.js';
export { type ParameterSpec, expectedParameters } from './parameters.js';
export { type GridThw, type ResamplerIndexInputs, resamplerInputs } from './inputs.js';
export {
  type ErnieResamplerInputs,
  type ErnieResamplerOptions,
  type ErnieResamplerOutputs,
  RESAMPLER_IO,
  buildErnieResampler,
  buildErnieResamplerModel,
} from './resampler.js';
