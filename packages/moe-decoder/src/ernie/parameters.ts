import { type ParameterSpec, recordParameters } from '@vlmkit/onnx-graph';
import type { ErnieTextConfig } from './config.js';
import { buildErnieTextDecoderModel } from './standalone.js';

/**
 * The parameters `buildErnieTextDecoder` reads, under the names of
 * docs/parameter-names.md (vLLM's module tree with packed qkv_proj /
 * gate_up_proj): a dry run of the builder (vLLM: named_parameters()), so the
 * list follows the build. The routed experts are read per expert, as
 * checkpoints store them (`{text,vision}_experts.{e}.{gate,up,down}_proj.weight`).
 * With tied embeddings the head reads `embed_tokens.weight` (no `lm_head.weight`).
 */
export function ernieTextExpectedParameters(config: ErnieTextConfig): ParameterSpec[] {
  return recordParameters((weights) => buildErnieTextDecoderModel(weights, config));
}
