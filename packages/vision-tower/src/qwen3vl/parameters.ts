import { type ParameterSpec, recordParameters } from '@vlmkit/onnx-graph';
import type { Qwen3VlVisionConfig } from './config.js';
import { buildQwen3VlVisionTowerModel } from './vision-transformer.js';

/**
 * The parameters `buildQwen3VlVisionTower` reads, in module order, named as HF 5.17 names them under
 * `model.visual.` but for the blocks' MLP, which is ERNIE's (HF's `mlp.linear_fc1/2` are `mlp.fc1/2` here, the
 * weight mapper's rename): `patch_embed.proj.{weight [Dv, C, T, p, p], bias}`, `pos_embed.weight`,
 * `blocks.{i}.{norm1, attn.qkv, attn.proj, norm2, mlp.fc1, mlp.fc2}.*`,
 * `deepstack_merger_list.{j}.{norm, linear_fc1, linear_fc2}.*` and `merger.{norm, linear_fc1, linear_fc2}.*`.
 * A dry run of the builder (vLLM: named_parameters()).
 */
export function expectedQwen3VlVisionParameters(config: Qwen3VlVisionConfig): ParameterSpec[] {
  return recordParameters((weights) => buildQwen3VlVisionTowerModel(weights, config));
}
