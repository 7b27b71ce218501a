import { Graph, type Weights } from '@vlmkit/onnx-graph';
import type { KvPair } from '../types.js';
import type { ErnieTextConfig } from './config.js';
import { buildErnieTextDecoder } from './model.js';
import type { ExpertsImpl } from './moe.js';

export interface ErnieTextDecoderModelOptions {
  /** How MoE layers run their routed experts: 'sparse' (default, only the chosen ones) or 'all' (every expert, weighted). */
  experts?: ExpertsImpl;
  /** Also output each layer's hidden state as `hidden_states.{i}` [B, S, D] (tests, debugging). */
  outputHiddenStates?: boolean;
  /** Also output each MoE layer's routing as `router.{i}.topk_ids` [B*S, k] int64 and `router.{i}.topk_weights` [B*S, k]. */
  outputRouting?: boolean;
  /** Graph name written into the model. */
  name?: string;
}

/**
 * The ERNIE text decoder as a complete graph with named inputs and outputs,
 * one step of prefill or decode with a KV cache:
 *
 * inputs
 * - `input_ids` [B, S] int64
 * - `vision_embeds` [N, D] float32 (N may be 0), `vision_positions` [N] int64 (flattened b*S+s)
 * - `moe_token_type` [B, S] int64 (nonzero: vision experts)
 * - `attention_mask` [B, P+S] int64 (1 real, 0 padding)
 * - `rope_cos`, `rope_sin` [B, S, headDim/2] float32, from the 3D position ids on the host (`ernieRotaryTables`)
 * - `past_key_values.{i}.key` / `.value` [B, Hkv, P, headDim] float32 (P may be 0)
 *
 * outputs
 * - `logits` [B, S, V] float32
 * - `present.{i}.key` / `.value` [B, Hkv, P+S, headDim]
 * - `hidden_states.{i}` [B, S, D] with `outputHiddenStates`
 * - `router.{i}.topk_ids` / `.topk_weights` [B*S, k] for MoE layers with `outputRouting`
 */
export function buildErnieTextDecoderModel(weights: Weights, config: ErnieTextConfig, options: ErnieTextDecoderModelOptions = {}): Graph {
  const g = new Graph({ name: options.name ?? 'ernie_text_decoder' });
  const { hiddenSize: D, numKeyValueHeads: hkv, headDim: hd } = config;
  const inputIds = g.input('input_ids', 'int64', ['batch', 'seq']);
  const visionEmbeds = g.input('vision_embeds', 'float32', ['vision_tokens', D]);
  const visionPositions = g.input('vision_positions', 'int64', ['vision_tokens']);
  const moeTokenType = g.input('moe_token_type', 'int64', ['batch', 'seq']);
  const attentionMask = g.input('attention_mask', 'int64', ['batch', 'total']);
  const ropeCos = g.input('rope_cos', 'float32', ['batch', 'seq', hd / 2]);
  const ropeSin = g.input('rope_sin', 'float32', ['batch', 'seq', hd / 2]);
  const past: KvPair[] = [];
  for (let i = 0; i < config.numHiddenLayers; i++) {
    past.push({
      key: g.input(`past_key_values.${i}.key`, 'float32', ['batch', hkv, 'past', hd]),
      value: g.input(`past_key_values.${i}.value`, 'float32', ['batch', hkv, 'past', hd]),
    });
  }
  const out = buildErnieTextDecoder(
    g,
    weights,
    config,
    {
      inputIds,
      visionEmbeds,
      visionPositions,
      moeTokenType,
      attentionMask,
      ropeCos,
      ropeSin,
      past,
    },
    { routing: options.outputRouting ?? false, ...(options.experts ? { experts: options.experts } : {}) },
  );
  g.output(out.logits, 'logits');
  out.present!.forEach((kv, i) => {
    g.output(kv.key, `present.${i}.key`, ['batch', hkv, 'total', hd]);
    g.output(kv.value, `present.${i}.value`, ['batch', hkv, 'total', hd]);
  });
  if (options.outputHiddenStates)
    out.layerOutputs.forEach((h, i) => {
      g.output(h, `hidden_states.${i}`);
    });
  out.routing.forEach((r, i) => {
    if (r === undefined) return;
    g.output(r.topkIds, `router.${i}.topk_ids`);
    g.output(r.topkWeights, `router.${i}.topk_weights`);
  });
  return g;
}
