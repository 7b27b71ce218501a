// @vlmkit/vision-tower: vision encoders as ONNX subgraphs (ERNIE-4.5-VL ViT, SigLIP, Qwen3-VL ViT).

export type { VisionActivation } from './activation.js';
export { blockDiagonalMask, type FrameMask } from './ernie/attention-mask.js';
export {
  ErnieVisionConfig,
  type ErnieVisionConfigOptions,
  type ErnieVisionReference,
  ernieVisionHeadDim,
  type VisionBlockConfig,
} from './ernie/config.js';
export { type ErnieVisionInputs, ernieVisionInputs } from './ernie/inputs.js';
export { expectedErnieVisionParameters } from './ernie/parameters.js';
export { type VisionRotary, visionAttention } from './ernie/vision-attention.js';
export { visionBlock, visionMlp } from './ernie/vision-block.js';
export {
  buildErnieVisionTower,
  buildErnieVisionTowerModel,
  DEFAULT_ATTENTION_OP,
  ERNIE_VISION_TOWER_INPUTS,
  ERNIE_VISION_TOWER_OUTPUTS,
  type ErnieVisionBuildOptions,
  type ErnieVisionTowerFeeds,
  type ErnieVisionTowerInputs,
  type ErnieVisionTowerOutputs,
  ernieVisionTowerSizes,
  patchEmbed,
} from './ernie/vision-transformer.js';
export { VisionTowerError, type VisionTowerErrorCode } from './errors.js';
export * from './qwen3vl/index.js';
export { SiglipVisionConfig, siglipNumPatches } from './siglip/config.js';
export { siglipVisionEmbeddings } from './siglip/embeddings.js';
export { siglipAttention, siglipEncoderLayer, siglipMlp } from './siglip/encoder-layer.js';
export { expectedSiglipVisionParameters } from './siglip/parameters.js';
export {
  buildSiglipVisionTower,
  buildSiglipVisionTowerModel,
  SIGLIP_VISION_TOWER_INPUTS,
  SIGLIP_VISION_TOWER_IO,
  type SiglipVisionBuildOptions,
  type SiglipVisionTowerOutputs,
} from './siglip/vision-transformer.js';
export type { AttentionOp, ParameterSpec } from './types.js';
