// @vlmkit/mrope: M-RoPE / 2D rope position ids and cos/sin tables (pure TypeScript, no ORT).

export { decodePositionIds } from './decode.js';
export { ERNIE_45_VL_TOKENS, ERNIE_45_VL_TOKENS_HF, type ErnieRopeIndexConfig, ernieRopeIndex } from './ernie-rope-index.js';
export { MropeError, type MropeErrorCode } from './errors.js';
export { type GridThw, type IdDtype, type IdTensor, type IntArray, idsToArray, type MropePositions } from './inputs.js';
export { ropeInverseFrequencies } from './inv-freq.js';
export {
  QWEN_VL_TOKENS,
  type Qwen25RopeIndexConfig,
  type Qwen25RopeIndexInput,
  type Qwen25RopeIndexOptions,
  type QwenRopeIndexConfig,
  qwen2VlRopeIndex,
  qwen3VlRopeIndex,
  qwen25VlRopeIndex,
  type TemporalScale,
} from './qwen-rope-index.js';
export {
  computeRopeIndex,
  type LlmGrid,
  type RopeIndexInput,
  type RopeIndexOptions,
  type RopeIndexSpec,
  type TokenType,
  type VideoTemporalAdvance,
} from './rope-index.js';
export { applyErnieTextRotary, applyQwenTextRotary, applyVisionRotary, type TextRotaryOptions } from './rotary-graph.js';
export { applyRotaryReference, type HeadLayout, type RotaryStyle, type RotaryTable } from './rotate.js';
export {
  type CosSinTables,
  type ErnieTextRotaryConfig,
  ernieFrequencyAxes,
  ernieTextRotaryCosSin,
  expandRotaryTable,
  type FrequencyAxes,
  interleavedFrequencyAxes,
  mropeCosSin,
  type PositionIdsLike,
  type QwenTextRotaryConfig,
  qwen2VlMropeCosSin,
  qwen3VlMropeCosSin,
  sectionedFrequencyAxes,
} from './text-rotary.js';
export {
  type VisionCosSin,
  type VisionPositionIds,
  type VisionRotaryConfig,
  visionRotaryCosSin,
  visionRotaryPositionIds,
} from './vision-rotary.js';
