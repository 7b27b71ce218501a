// The Qwen3-VL family's public names (re-exported by the package index).
export { type Qwen3VlWeights, qwen3VlCheckpoint } from './checkpoint.js';
export { QWEN3VL_MODEL_TYPES, type Qwen3VLConfig, type Qwen3VlModelType, type Qwen3VlTokens, qwen3VLConfig } from './config.js';
export { qwen3VL, qwen3VLMoe } from './family.js';
export {
  QWEN3VL_FORWARD_OUTPUTS,
  QWEN3VL_INPUT_NAMES,
  QWEN3VL_INPUTS,
  Qwen3VL,
  type Qwen3VlForwardOutputs,
  type Qwen3VlInputs,
  type Qwen3VlLoadOptions,
} from './model.js';
export { analyzeQwen3VlPrompt, type Qwen3VlPrompt, type Qwen3VlPromptInputs } from './prompt.js';
export {
  buildQwen3VlVisionEncoder,
  QWEN3VL_VISION_ENCODER_INPUTS,
  QWEN3VL_VISION_ENCODER_OUTPUTS,
  type Qwen3VlVisionEncoderFeeds,
  qwen3VlVisionEncoderFeeds,
} from './vision-encoder.js';
export { loadQwen3VlWeights, qwen3VlComponents } from './weights.js';
