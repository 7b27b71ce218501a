import { type ParameterSpec, recordParameters } from '@vlmkit/onnx-graph';
import type { Qwen3VlTextConfig } from './config.js';
import { buildQwen3VlTextDecoderModel } from './standalone.js';

/**
 * The parameters `buildQwen3VlTextDecoder` reads, under vLLM Qwen3 / Qwen3-MoE module names with its packed
 * `qkv_proj` (q rows, then k, then v) and dense `mlp.gate_up_proj` (gate rows, then up): a dry run of the
 * builder (vLLM: named_parameters()). The routed experts are read per expert
 * (`mlp.experts.{e}.{gate,up,down}_proj.weight`) and the router as `mlp.gate.weight` [E, D]; biases only with
 * `attentionBias`; with tied embeddings the head reads `embed_tokens.weight` (no `lm_head.weight`).
 */
export function qwen3VlTextExpectedParameters(config: Qwen3VlTextConfig): ParameterSpec[] {
  return recordParameters((weights) => buildQwen3VlTextDecoderModel(weights, config, { deepstackLevels: 0 }));
}
