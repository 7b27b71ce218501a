import { contract, declareInputs, type Feeds, type FeedValues, Graph, type Weights } from '@vlmkit/onnx-graph';
import { DECODER_OUTPUTS, markPast, PAST_KEY_VALUES, presentOutputsOf } from '../kv-io.js';
import { rewriteDecoderModel } from '../model-passes.js';
import type { DecoderModelOptions } from '../types.js';
import type { Qwen3VlTextConfig } from './config.js';
import { buildQwen3VlTextDecoder } from './model.js';

export interface Qwen3VlTextDecoderModelOptions extends DecoderModelOptions {
  /** The deepstack levels (vision `deepstack_visual_indexes`): level k is added after layer k; 0 for none. */
  deepstackLevels: number;
  /** Also output each layer's output as `hidden_states.{i}` [B, S, D] (tests, debugging). */
  outputHiddenStates?: boolean;
  /** Also output each MoE layer's routing as `router.{i}.topk_ids` [B*S, k] int64 and `router.{i}.topk_weights`. */
  outputRouting?: boolean;
}

/**
 * The inputs of `buildQwen3VlTextDecoderModel`'s graph, one step of prefill or decode. One `deepstack_{k}`
 * per level. Bound per graph: `hidden` (D), `kv_heads`, `head_dim`, `counts.layer`, `counts.level`, the
 * cache dtype.
 */
export const QWEN3VL_DECODER_INPUTS = contract({
  input_ids: ['int64', ['batch', 'seq'], { doc: 'the token ids' }],
  vision_embeds: [
    'float32',
    ['vision_tokens', 'hidden'],
    { doc: 'the vision encoder `embeds` of the images then of the videos, concatenated; [0, hidden] in decode steps' },
  ],
  vision_positions: [
    'int64',
    ['vision_tokens'],
    { doc: 'flattened b*S + s of the image placeholder tokens then of the video placeholder tokens (row-major); [0] in decode steps' },
  ],
  deepstack: [
    'float32',
    ['vision_tokens', 'hidden'],
    { each: 'level', doc: 'the vision encoder output of the same name, rows as vision_embeds; [0, hidden] in decode steps' },
  ],
  attention_mask: ['int64', ['batch', 'total'], { doc: '1 for real tokens, 0 for padding, over the cached tokens and this step' }],
  position_ids: [
    'int64',
    [3, 'batch', 'seq'],
    { doc: 'HF get_rope_index t, h, w positions (0 on left padding); decode: real tokens so far + rope delta on all three' },
  ],
  past_key_values: PAST_KEY_VALUES,
  logits_to_keep: ['int64', [], { optional: true, doc: 'logits for the last n positions only, 0 for all' }],
});

/** The debugging outputs `buildQwen3VlTextDecoderModel` adds on request, besides `DECODER_OUTPUTS`. */
export const QWEN3VL_DEBUG_OUTPUTS = {
  hiddenStates: (layer: number) => `hidden_states.${layer}` as const,
  routerTopkIds: (layer: number) => `router.${layer}.topk_ids` as const,
  routerTopkWeights: (layer: number) => `router.${layer}.topk_weights` as const,
} as const;

/** One step's inputs by key, as tensors of the caller's type. */
export type Qwen3VlDecoderFeedInputs<T> = FeedValues<typeof QWEN3VL_DECODER_INPUTS.schema, T>;
/** The feeds of one run, by input name (`QWEN3VL_DECODER_INPUTS.feeds(values)`). */
export type Qwen3VlDecoderFeeds<T> = Feeds<typeof QWEN3VL_DECODER_INPUTS.schema, T>;

/**
 * The Qwen3-VL (dense or MoE) text decoder as a complete graph: one pure step of prefill or decode with a
 * KV cache. Inputs `QWEN3VL_DECODER_INPUTS`; outputs `logits` [B, S, V] float32 and `present.{i}.key` /
 * `.value`, with `outputHiddenStates` / `outputRouting` the debugging outputs of `QWEN3VL_DEBUG_OUTPUTS`.
 */
export function buildQwen3VlTextDecoderModel(weights: Weights, config: Qwen3VlTextConfig, options: Qwen3VlTextDecoderModelOptions): Graph {
  const g = new Graph({ name: options.name ?? 'qwen3vl_text_decoder' });
  const { hiddenSize: D, numKeyValueHeads: hkv, headDim: hd } = config;
  const x = declareInputs(g, QWEN3VL_DECODER_INPUTS, {
    sizes: { hidden: D, kv_heads: hkv, head_dim: hd },
    counts: { layer: config.numHiddenLayers, level: options.deepstackLevels },
    dtypes: { kv_cache: 'float32' },
    include: { logits_to_keep: options.logitsToKeep === true },
  });
  const logitsToKeep = x.logits_to_keep;
  const out = buildQwen3VlTextDecoder(
    g,
    weights,
    config,
    {
      inputIds: x.input_ids,
      visionEmbeds: x.vision_embeds,
      visionPositions: x.vision_positions,
      deepstack: x.deepstack,
      attentionMask: x.attention_mask,
      positionIds: x.position_ids,
      past: markPast(g, x.past_key_values),
      ...(logitsToKeep ? { logitsToKeep } : {}),
    },
    options.kvCache ? { kvCache: options.kvCache } : {},
  );
  g.output(out.logits, DECODER_OUTPUTS.names.logits);
  presentOutputsOf(g, out.present!, hkv, hd, options.kvCache === 'append' ? 'seq' : 'total');
  if (options.outputHiddenStates) {
    out.layerOutputs.forEach((h, i) => {
      g.output(g.cast(h, 'float32'), QWEN3VL_DEBUG_OUTPUTS.hiddenStates(i));
    });
  }
  if (options.outputRouting) {
    out.routing.forEach((r, i) => {
      if (r === undefined) return;
      g.output(r.topkIds, QWEN3VL_DEBUG_OUTPUTS.routerTopkIds(i));
      g.output(r.topkWeights, QWEN3VL_DEBUG_OUTPUTS.routerTopkWeights(i));
    });
  }
  return rewriteDecoderModel(g, options);
}
