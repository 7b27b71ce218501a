// @vlmkit/mrope: M-RoPE / 2D rope position ids and cos/sin tables (pure TypeScript, no ORT).
export { MropeError, type MropeErrorCode } from './errors.js';
export { idsToArray, type GridThw, type IdDtype, type IdTensor, type IntArray, type MropePositions } from './inputs.js';
export {
  computeRopeIndex,
  type LlmGrid,
  type RopeIndexInput,
  type RopeIndexOptions,
  type RopeIndexSpec,
  type TokenType,
  type VideoTemporalAdvance,
} from './rope-index.js';
export { ernieRopeIndex, ERNIE_45_VL_TOKENS, ERNIE_45_VL_TOKENS_HF, type ErnieRopeIndexConfig } from './ernie-rope-index.js';
export {
  qwen2VlRopeIndex,
  qwen25VlRopeIndex,
  qwen3VlRopeIndex,
  QWEN_VL_TOKENS,
  type Qwen25RopeIndexConfig,
  type Qwen25RopeIndexInput,
  type Qwen25RopeIndexOptions,
  type QwenRopeIndexConfig,
  type TemporalScale,
} from './qwen-rope-index.js';
export { decodePositionIds } from './decode.js';
export { ropeInverseFrequencies } from './inv-freq.js';
export {
  ernieFrequencyAxes,
  ernieTextRotaryCosSin,
  expandRotaryTable,
  interleavedFrequencyAxes,
  mropeCosSin,
  qwen2VlMropeCosSin,
  qwen3VlMropeCosSin,
  sectionedFrequencyAxes,
  type CosSinTables,
  type ErnieTextRotaryConfig,
  type FrequencyAxes,
  type PositionIdsLike,
  type QwenTextRotaryConfig,
} from './text-rotary.js';
export { visionRotaryCosSin, visionRotaryPositionIds, type VisionCosSin, type VisionPositionIds, type VisionRotaryConfig } from './vision-rotary.js';
export { applyRotaryReference, type HeadLayout, type RotaryStyle, type RotaryTable } from './rotate.js';
export { applyErnieTextRotary, applyQwenTextRotary, applyVisionRotary, type TextRotaryOptions } from './rotary-graph.js';
