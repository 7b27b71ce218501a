import { qwen3VlTextExpectedParameters } from '@vlmkit/moe-decoder';
import type { Weights } from '@vlmkit/onnx-graph';
import type { Checkpoint } from '@vlmkit/safetensors';
import { expectedQwen3VlVisionParameters } from '@vlmkit/vision-tower';
import { type MapOptions, type MappingReport, mapQwen3VL, type Qwen3VlComponents } from '@vlmkit/weight-mapper';
import type { Qwen3VLConfig } from './config.js';

/** What the mapper takes for Qwen3-VL: the tower's and the decoder's parameter lists (dry runs) and the decoder's config. */
export function qwen3VlComponents(config: Qwen3VLConfig): Qwen3VlComponents {
  return {
    vision: { parameters: expectedQwen3VlVisionParameters(config.vision) },
    decoder: { parameters: qwen3VlTextExpectedParameters(config.text), config: config.text },
  };
}

/** The checkpoint mapped onto the vision tower's and the decoder's parameters (nothing read yet). */
export function loadQwen3VlWeights(
  ckpt: Checkpoint,
  config: Qwen3VLConfig,
  options: MapOptions = {},
): Promise<{ vision: Weights; decoder: Weights; report: MappingReport }> {
  return mapQwen3VL(ckpt, qwen3VlComponents(config), options);
}
