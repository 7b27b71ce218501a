// @vlmkit/resampler: ERNIE-4.5-VL's variable-resolution resampler (vision tower output -> text embeddings) as an ONNX subgraph.

export { type ErnieResamplerConfig, fromHfConfig, resamplerConfigFromFields, validateResamplerConfig } from './config.js';
export { ResamplerError, type ResamplerErrorCode } from './errors.js';
export { type GridThw, type ResamplerIndexInputs, resamplerInputs } from './inputs.js';
export { expectedParameters, type ParameterSpec } from './parameters.js';
export {
  buildErnieResampler,
  buildErnieResamplerModel,
  type ErnieResamplerInputs,
  type ErnieResamplerOptions,
  type ErnieResamplerOutputs,
  RESAMPLER_INPUTS,
  RESAMPLER_IO,
  RESAMPLER_OUTPUTS,
} from './resampler.js';
