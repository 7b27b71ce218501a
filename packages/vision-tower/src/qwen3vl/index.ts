// The Qwen3-VL vision tower's public names (re-exported by the package index): Conv3d patches, interpolated
// learned positions, 2D rotary, the final and deepstack mergers.

export { Qwen3VlVisionConfig, qwen3VlPatchDim, qwen3VlVisionHeadDim } from './config.js';
export { patchEmbed as qwen3VlPatchEmbed, positionEmbedding as qwen3VlPositionEmbedding } from './embeddings.js';
export {
  POSITION_TAPS,
  type PositionInterpolation,
  positionInterpolation,
  type Qwen3VlVisionInputs,
  qwen3VlVisionInputs,
} from './inputs.js';
export { patchMerger } from './merger.js';
export { expectedQwen3VlVisionParameters } from './parameters.js';
export {
  buildQwen3VlVisionTower,
  buildQwen3VlVisionTowerModel,
  QWEN3VL_VISION_TOWER_INPUTS,
  QWEN3VL_VISION_TOWER_OUTPUTS,
  type Qwen3VlVisionBuildOptions,
  type Qwen3VlVisionTowerFeeds,
  type Qwen3VlVisionTowerInputs,
  type Qwen3VlVisionTowerModelOptions,
  type Qwen3VlVisionTowerOutputs,
  qwen3VlVisionTowerSizes,
} from './vision-transformer.js';
