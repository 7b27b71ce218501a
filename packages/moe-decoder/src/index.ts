// @vlmkit/moe-decoder: ERNIE-4.5-VL MoE text decoder as an ONNX subgraph with a KV cache.
export { MoeDecoderError, type MoeDecoderErrorCode } from './errors.js';
export { type ErnieMlpType, type ErnieTextConfig, ernieTextConfigFromHf } from './ernie-config.js';
export { type ParameterSpec, ernieTextExpectedParameters } from './ernie-parameters.js';
export {
  type ErnieTextDecoderInputs,
  type ErnieTextDecoderOutputs,
  type KvPair,
  buildErnieTextDecoder,
} from './ernie-decoder.js';
export { type ErnieTextDecoderModelOptions, buildErnieTextDecoderModel } from './ernie-model.js';
export { ernieDecodePositions, ernieRotaryTables } from './ernie-rotary.js';
export { causalPaddingMask } from './attention-mask.js';
export type { MoeRouting } from './ernie-moe.js';
// Granite 4 Vision text decoder (dense Granite with deepstack injection).
export { type GraniteTextConfig, graniteTextConfigFromHf } from './granite-config.js';
export { graniteTextExpectedParameters } from './granite-parameters.js';
export { checkGraniteLevels, graniteDeepstackLevels } from './granite-levels.js';
export {
  type GraniteTextDecoderInputs,
  type GraniteTextDecoderOptions,
  type GraniteTextDecoderOutputs,
  buildGraniteTextDecoder,
} from './granite-decoder.js';
export { type GraniteTextDecoderModelOptions, buildGraniteTextDecoderModel } from './granite-model.js';
export { graniteDecodePositions, granitePositionIds, graniteRotaryTables } from './granite-rotary.js';
export type { ExpertsImpl } from './ernie-moe.js';
