// @vlmkit/moe-decoder: ERNIE-4.5-VL MoE text decoder as an ONNX subgraph with a KV cache.

export { causalPaddingMask } from './attention-mask.js';
export {
  buildDecodeLoopModel,
  DECODE_LOOP_INPUTS,
  DECODE_LOOP_IO,
  type DecodeLoopModelOptions,
  type DecodeLoopSpec,
  type DecodeLoopStep,
  type DecoderStepSchema,
} from './decode-loop.js';
export { type ErnieMlpType, type ErnieTextConfig, ernieTextConfigFromFields, ernieTextConfigFromHf } from './ernie/config.js';
export { buildErnieDecodeLoopModel, type ErnieDecodeLoopModelOptions } from './ernie/decode-loop.js';
export {
  buildErnieTextDecoder,
  type ErnieTextDecoderInputs,
  type ErnieTextDecoderOptions,
  type ErnieTextDecoderOutputs,
} from './ernie/model.js';
export type { MoeRouting } from './ernie/moe.js';
export { ernieTextExpectedParameters } from './ernie/parameters.js';
export { ernieDecodePositions, ernieRotaryTables } from './ernie/rotary.js';
export {
  buildErnieTextDecoderModel,
  ERNIE_DEBUG_OUTPUTS,
  ERNIE_DECODER_INPUTS,
  type ErnieDecoderFeedInputs,
  type ErnieDecoderFeeds,
  type ErnieTextDecoderModelOptions,
} from './ernie/standalone.js';
export { MoeDecoderError, type MoeDecoderErrorCode } from './errors.js';
// Granite 4 Vision text decoder (dense Granite with deepstack injection).
export { type GraniteTextConfig, graniteTextConfigFromFields, graniteTextConfigFromHf } from './granite/config.js';
export { buildGraniteDecodeLoopModel, type GraniteDecodeLoopModelOptions } from './granite/decode-loop.js';
export { checkGraniteLevels, type GraniteDeepstackLevel, graniteDeepstackLevels, graniteDeepstackPlan } from './granite/levels.js';
export {
  buildGraniteTextDecoder,
  type GraniteTextDecoderInputs,
  type GraniteTextDecoderOptions,
  type GraniteTextDecoderOutputs,
} from './granite/model.js';
export { graniteTextExpectedParameters } from './granite/parameters.js';
export { graniteDecodePositions, granitePositionIds, graniteRotaryTables } from './granite/rotary.js';
export {
  buildGraniteTextDecoderModel,
  GRANITE_DEBUG_OUTPUTS,
  GRANITE_DECODER_INPUTS,
  type GraniteDecoderFeedInputs,
  type GraniteDecoderFeeds,
  type GraniteTextDecoderModelOptions,
} from './granite/standalone.js';
export {
  DECODER_OUTPUTS,
  DECODER_STEP_IO,
  KV_CACHE_DTYPE,
  KV_CACHE_IO,
  type KvCacheDType,
  type KvKind,
  type KvTensors,
  kvCacheDType,
  PAST_KEY_VALUES,
  type PastName,
  type PresentName,
  presentOutputs,
} from './kv-io.js';
export * from './qwen3vl/index.js';
export { greedyTokens, type SamplingInputs, sampledTokens } from './token-choice.js';
export type { DecoderPassOptions, KvCacheMode, KvPair, ParameterSpec } from './types.js';
