import { type ParameterSpec, recordParameters } from '@vlmkit/onnx-graph';
import type { GraniteTextConfig } from './config.js';
import { buildGraniteTextDecoderModel } from './standalone.js';

/**
 * The parameters `buildGraniteTextDecoder` reads, under vLLM GraniteModel's
 * module names with its packed `qkv_proj` (q rows, then k, then v) and
 * `mlp.gate_up_proj` (gate rows, then up): a dry run of the builder (vLLM:
 * named_parameters()). Biases only with `attentionBias` / `mlpBias`; with
 * tied embeddings the head reads `embed_tokens.weight` (no `lm_head.weight`).
 * The deepstack levels add no parameters.
 */
export function graniteTextExpectedParameters(config: GraniteTextConfig): ParameterSpec[] {
  return recordParameters((weights) => buildGraniteTextDecoderModel(weights, config, { levels: [] }));
}
