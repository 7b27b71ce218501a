// @vlmkit/vision-tower: vision encoders as ONNX subgraphs (ERNIE-4.5-VL ViT, SigLIP).
export { VisionTowerError, type VisionTowerErrorCode } from './errors.js';
export { type VisionActivation } from './activation.js';
export type { AttentionOp, ParameterSpec } from './types.js';
export {
  ErnieVisionConfig,
  type ErnieVisionConfigOptions,
  type ErnieVisionReference,
  ernieVisionHeadDim,
} from './ernie/config.js';
export { expectedErnieVisionParameters } from './ernie/parameters.js';
export { ernieVisionInputs, type ErnieVisionInputs } from './ernie/inputs.js';
export { type FrameMask, blockDiagonalMask } from './ernie/attention-mask.js';
export { type VisionRotary, visionAttention } from './ernie/vision-attention.js';
export { visionBlock, visionMlp } from './ernie/vision-block.js';
export {
  DEFAULT_ATTENTION_OP,
  type ErnieVisionBuildOptions,
  type ErnieVisionTowerInputs,
  type ErnieVisionTowerOutputs,
  buildErnieVisionTower,
  buildErnieVisionTowerModel,
  patchEmbed,
} from './ernie/vision-transformer.js';
export { SiglipVisionConfig, siglipNumPatches } from './siglip/config.js';
export { expectedSiglipVisionParameters } from './siglip/parameters.js';
export { siglipVisionEmbeddings } from './siglip/embeddings.js';
export { siglipAttention, siglipEncoderLayer, siglipMlp } from './siglip/encoder-layer.js';
export {
  type SiglipVisionBuildOptions,
  type SiglipVisionTowerOutputs,
  buildSiglipVisionTower,
  buildSiglipVisionTowerModel,
} from './siglip/vision-transformer.js';
