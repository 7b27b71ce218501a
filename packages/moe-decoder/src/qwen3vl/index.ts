// The Qwen3-VL decoder's public names (re-exported by the package index).
export { type Qwen3VlMlpType, type Qwen3VlTextConfig, qwen3VlTextConfigFromFields, qwen3VlTextConfigFromHf } from './config.js';
export { buildQwen3VlDecodeLoopModel, type Qwen3VlDecodeLoopModelOptions } from './decode-loop.js';
export {
  buildQwen3VlTextDecoder,
  type Qwen3VlTextDecoderInputs,
  type Qwen3VlTextDecoderOptions,
  type Qwen3VlTextDecoderOutputs,
} from './model.js';
export { qwen3VlTextExpectedParameters } from './parameters.js';
export { qwen3VlRotaryTables } from './rotary.js';
export {
  buildQwen3VlTextDecoderModel,
  QWEN3VL_DEBUG_OUTPUTS,
  QWEN3VL_DECODER_INPUTS,
  type Qwen3VlDecoderFeedInputs,
  type Qwen3VlDecoderFeeds,
  type Qwen3VlTextDecoderModelOptions,
} from './standalone.js';
