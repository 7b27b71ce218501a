import { type ParameterSpec, recordParameters } from '@vlmkit/onnx-graph';
import type { SiglipVisionConfig } from './config.js';
import { buildSiglipVisionTowerModel } from './vision-transformer.js';

/**
 * The parameters `buildSiglipVisionTower` reads, named like vLLM's
 * SiglipVisionTransformer (the `vision_model.` level of the hub names
 * stripped) with vLLM's packed `self_attn.qkv_proj` (q rows, then k, then v).
 * `post_layernorm.*` only when `postLayerNorm` (Granite 4 Vision does not use
 * it). A dry run of the builder (vLLM: named_parameters()).
 */
export function expectedSiglipVisionParameters(config: SiglipVisionConfig, options: { postLayerNorm?: boolean } = {}): ParameterSpec[] {
  return recordParameters((weights) => buildSiglipVisionTowerModel(weights, config, { postLayerNorm: options.postLayerNorm ?? false }));
}
