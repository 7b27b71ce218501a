import { contract, declareInputs, type Feeds, type FeedValues, Graph, type Weights } from '@vlmkit/onnx-graph';
import { DECODER_OUTPUTS, markPast, PAST_KEY_VALUES, presentOutputsOf } from '../kv-io.js';
import { rewriteDecoderModel } from '../model-passes.js';
import type { DecoderModelOptions } from '../types.js';
import type { ErnieTextConfig } from './config.js';
import { buildErnieTextDecoder } from './model.js';

export interface ErnieTextDecoderModelOptions extends DecoderModelOptions {
  /** The If that skips the vision experts when no token is a vision one (`ErnieMoeOptions`; default true). */
  emptyModalityIf?: boolean;
  /** Also output each layer's hidden state as `hidden_states.{i}` [B, S, D] (tests, debugging). */
  outputHiddenStates?: boolean;
  /** Also output each MoE layer's routing as `router.{i}.topk_ids` [B*S, k] int64 and `router.{i}.topk_weights` [B*S, k]. */
  outputRouting?: boolean;
}

/**
 * The inputs of `buildErnieTextDecoderModel`'s graph, one step of prefill or decode. Bound per graph:
 * `hidden` (D), `half_head_dim`, `kv_heads`, `head_dim`, `counts.layer` and the cache dtype.
 */
export const ERNIE_DECODER_INPUTS = contract({
  input_ids: ['int64', ['batch', 'seq'], { doc: 'the token ids' }],
  vision_embeds: [
    'float32',
    ['vision_tokens', 'hidden'],
    { doc: 'the vision encoder `embeds` of the images then of the videos, concatenated; [0, hidden] in decode steps' },
  ],
  vision_positions: [
    'int64',
    ['vision_tokens'],
    { doc: 'flattened b*S + s of the image placeholder tokens then of the video placeholder tokens (row-major), [0] in decode steps' },
  ],
  moe_token_type: [
    'int64',
    ['batch', 'seq'],
    { doc: 'HF moe_mm_token_type_ids (1 for image/video placeholders and their start/end tokens, else 0); 0 in decode steps' },
  ],
  attention_mask: ['int64', ['batch', 'total'], { doc: '1 for real tokens, 0 for padding, over the cached tokens and this step' }],
  rope_cos: [
    'float32',
    ['batch', 'seq', 'half_head_dim'],
    { doc: 'cos(float32(position_ids[text_rotary.axes[i], b, s] * text_rotary.inv_freq[i])) from the 3D position ids' },
  ],
  rope_sin: ['float32', ['batch', 'seq', 'half_head_dim'], { doc: 'sin of the same angles as rope_cos' }],
  past_key_values: PAST_KEY_VALUES,
  logits_to_keep: ['int64', [], { optional: true, doc: 'logits for the last n positions only, 0 for all' }],
});

/** The debugging outputs `buildErnieTextDecoderModel` adds on request, besides `DECODER_OUTPUTS`. */
export const ERNIE_DEBUG_OUTPUTS = {
  hiddenStates: (layer: number) => `hidden_states.${layer}` as const,
  routerTopkIds: (layer: number) => `router.${layer}.topk_ids` as const,
  routerTopkWeights: (layer: number) => `router.${layer}.topk_weights` as const,
} as const;

/** One step's inputs by key, as tensors of the caller's type (`past_key_values`: one entry per layer). */
export type ErnieDecoderFeedInputs<T> = FeedValues<typeof ERNIE_DECODER_INPUTS.schema, T>;
/** The feeds of one run, by input name (`feeds(ERNIE_DECODER_INPUTS, values)`). */
export type ErnieDecoderFeeds<T> = Feeds<typeof ERNIE_DECODER_INPUTS.schema, T>;

/**
 * The ERNIE text decoder as a complete graph with named inputs and outputs,
 * one step of prefill or decode with a KV cache:
 *
 * inputs
 * - `input_ids` [B, S] int64
 * - `vision_embeds` [N, D] float32 (N may be 0), `vision_positions` [N] int64 (flattened b*S+s)
 * - `moe_token_type` [B, S] int64 (nonzero: vision experts)
 * - `attention_mask` [B, P+S] int64 (1 real, 0 padding; 'append': P = the slots fed, 0 for free ones)
 * - `rope_cos`, `rope_sin` [B, S, headDim/2] float32, from the 3D position ids on the host (`ernieRotaryTables`)
 * - `past_key_values.{i}.key` / `.value` [B, Hkv, P, headDim] (P may be 0), float32 or float16 (`kvCacheDType`)
 * - `logits_to_keep` int64 scalar, with the `logitsToKeep` option (0: all positions)
 *
 * outputs
 * - `logits` [B, S, V] float32 ([B, n, V] when `logits_to_keep` is n > 0)
 * - `present.{i}.key` / `.value` [B, Hkv, P+S, headDim] ('append': the new rows, [B, Hkv, S, headDim]), as past
 * - `hidden_states.{i}` [B, S, D] float32 with `outputHiddenStates`
 * - `router.{i}.topk_ids` / `.topk_weights` [B*S, k] for MoE layers with `outputRouting`
 */
export function buildErnieTextDecoderModel(weights: Weights, config: ErnieTextConfig, options: ErnieTextDecoderModelOptions = {}): Graph {
  const g = new Graph({ name: options.name ?? 'ernie_text_decoder' });
  const { hiddenSize: D, numKeyValueHeads: hkv, headDim: hd } = config;
  const x = declareInputs(g, ERNIE_DECODER_INPUTS, {
    sizes: { hidden: D, half_head_dim: hd / 2, kv_heads: hkv, head_dim: hd },
    counts: { layer: config.numHiddenLayers },
    dtypes: { kv_cache: 'float32' },
    include: { logits_to_keep: options.logitsToKeep === true },
  });
  const logitsToKeep = x.logits_to_keep;
  const out = buildErnieTextDecoder(
    g,
    weights,
    config,
    {
      inputIds: x.input_ids,
      visionEmbeds: x.vision_embeds,
      visionPositions: x.vision_positions,
      moeTokenType: x.moe_token_type,
      attentionMask: x.attention_mask,
      ropeCos: x.rope_cos,
      ropeSin: x.rope_sin,
      past: markPast(g, x.past_key_values),
      ...(logitsToKeep ? { logitsToKeep } : {}),
    },
    {
      routing: options.outputRouting ?? false,
      ...(options.emptyModalityIf !== undefined ? { emptyModalityIf: options.emptyModalityIf } : {}),
      ...(options.kvCache ? { kvCache: options.kvCache } : {}),
    },
  );
  g.output(out.logits, DECODER_OUTPUTS.names.logits);
  presentOutputsOf(g, out.present!, hkv, hd, options.kvCache === 'append' ? 'seq' : 'total');
  if (options.outputHiddenStates)
    out.layerOutputs.forEach((h, i) => {
      g.output(g.cast(h, 'float32'), ERNIE_DEBUG_OUTPUTS.hiddenStates(i));
    });
  out.routing.forEach((r, i) => {
    if (r === undefined) return;
    g.output(r.topkIds, ERNIE_DEBUG_OUTPUTS.routerTopkIds(i));
    g.output(r.topkWeights, ERNIE_DEBUG_OUTPUTS.routerTopkWeights(i));
  });
  return rewriteDecoderModel(g, options);
}
