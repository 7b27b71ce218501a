import { type ParameterSpec, recordParameters } from '@vlmkit/onnx-graph';
import type { ErnieVisionConfig } from './config.js';
import { buildErnieVisionTowerModel } from './vision-transformer.js';

/**
 * The parameters `buildErnieVisionTower` reads, in module order
 * (`patch_embed.proj.weight`, `blocks.{i}.{norm1,attn.qkv,attn.proj,norm2,mlp.fc1,mlp.fc2}.*`,
 * `ln.*`; docs/parameter-names.md): a dry run of the builder, so the list is
 * the builder's own (vLLM: named_parameters()).
 */
export function expectedErnieVisionParameters(config: ErnieVisionConfig): ParameterSpec[] {
  return recordParameters((weights) => buildErnieVisionTowerModel(weights, config));
}
