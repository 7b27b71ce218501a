import { contract, declareInputs, type Feeds, type FeedValues, Graph, type Value, type Weights } from '@vlmkit/onnx-graph';
import { DECODER_OUTPUTS, markPast, PAST_KEY_VALUES, presentOutputsOf } from '../kv-io.js';
import { rewriteDecoderModel } from '../model-passes.js';
import type { DecoderModelOptions } from '../types.js';
import type { GraniteTextConfig } from './config.js';
import { buildGraniteTextDecoder } from './model.js';

export interface GraniteTextDecoderModelOptions extends DecoderModelOptions {
  /** Level k -> the LLM layer its features are added before (`graniteDeepstackLevels(config.json)`); [] for a text-only graph. */
  levels: readonly number[];
  /** Also output `hidden_states.{i}` (layer outputs), `layer_inputs.{i}` (layer inputs after injection) and `inputs_embeds`, all [B, S, D]. */
  outputHiddenStates?: boolean;
}

/**
 * The inputs of `buildGraniteTextDecoderModel`'s graph, one step of prefill or decode. `image_positions` and
 * one `deepstack_{k}` per level only for a graph with levels (`counts.level`). Bound per graph: `hidden` (D),
 * `kv_heads`, `head_dim`, `counts.layer` and the cache dtype.
 */
export const GRANITE_DECODER_INPUTS = contract({
  input_ids: ['int64', ['batch', 'seq'], { doc: 'the token ids' }],
  image_positions: [
    'int64',
    ['image_tokens'],
    { optional: true, doc: 'flattened b*S + s of the image_token_id tokens (row-major), in packing order; [0] in decode steps' },
  ],
  /** Level k's packed image features; the vision encoder's outputs carry the same names. */
  deepstack: [
    'float32',
    ['image_tokens', 'hidden'],
    { each: 'level', doc: 'the vision encoder output of the same name; [0, hidden] in decode steps' },
  ],
  attention_mask: ['int64', ['batch', 'total'], { doc: '1 for real tokens, 0 for padding, over the cached tokens and this step' }],
  position_ids: [
    'int64',
    ['batch', 'seq'],
    { doc: 'cumsum(attention_mask) - 1, and 1 where attention_mask is 0 (HF generate); decode: real tokens so far' },
  ],
  past_key_values: PAST_KEY_VALUES,
  logits_to_keep: ['int64', [], { optional: true, doc: 'logits for the last n positions only, 0 for all' }],
});

/** The debugging outputs `buildGraniteTextDecoderModel` adds with `outputHiddenStates`, besides `DECODER_OUTPUTS`. */
export const GRANITE_DEBUG_OUTPUTS = {
  hiddenStates: (layer: number) => `hidden_states.${layer}` as const,
  layerInputs: (layer: number) => `layer_inputs.${layer}` as const,
  inputsEmbeds: 'inputs_embeds',
} as const;

/** One step's inputs by key, as tensors of the caller's type (`past_key_values`: one entry per layer). */
export type GraniteDecoderFeedInputs<T> = FeedValues<typeof GRANITE_DECODER_INPUTS.schema, T>;
/** The feeds of one run, by input name (`feeds(GRANITE_DECODER_INPUTS, values)`). */
export type GraniteDecoderFeeds<T> = Feeds<typeof GRANITE_DECODER_INPUTS.schema, T>;

/**
 * The Granite 4 Vision text decoder as a complete graph with named inputs and
 * outputs: one pure step of prefill or decode with a KV cache (no state is
 * kept between runs).
 *
 * inputs
 * - `input_ids` [B, S] int64
 * - `image_positions` [N] int64: flattened b*S+s of the image tokens, in packing order (N = 0 in decode steps)
 * - `deepstack_{k}` [N, D] float32, one per level (none when `levels` is empty)
 * - `attention_mask` [B, P+S] int64 (1 real, 0 padding; 'append': P = the slots fed, 0 for free ones)
 * - `position_ids` [B, S] int64 (cos/sin are computed in the graph)
 * - `past_key_values.{i}.key` / `.value` [B, Hkv, P, headDim] (P may be 0), float32 or float16 (`kvCacheDType`)
 * - `logits_to_keep` int64 scalar, with the `logitsToKeep` option (0: all positions)
 *
 * outputs
 * - `logits` [B, S, V] float32 (divided by logits_scaling; [B, n, V] when `logits_to_keep` is n > 0)
 * - `present.{i}.key` / `.value` [B, Hkv, P+S, headDim] ('append': the new rows, [B, Hkv, S, headDim])
 * - with `outputHiddenStates`: `hidden_states.{i}`, `layer_inputs.{i}`, `inputs_embeds`
 */
export function buildGraniteTextDecoderModel(weights: Weights, config: GraniteTextConfig, options: GraniteTextDecoderModelOptions): Graph {
  const g = new Graph({ name: options.name ?? 'granite_text_decoder' });
  const { hiddenSize: D, numKeyValueHeads: hkv, headDim: hd } = config;
  const x = declareInputs(g, GRANITE_DECODER_INPUTS, {
    sizes: { hidden: D, kv_heads: hkv, head_dim: hd },
    counts: { layer: config.numHiddenLayers, level: options.levels.length },
    dtypes: { kv_cache: 'float32' },
    include: { image_positions: options.levels.length > 0, logits_to_keep: options.logitsToKeep === true },
  });
  const { image_positions: imagePositions, deepstack, logits_to_keep: logitsToKeep } = x;
  const out = buildGraniteTextDecoder(
    g,
    weights,
    config,
    {
      inputIds: x.input_ids,
      ...(imagePositions ? { imagePositions, deepstack } : {}),
      attentionMask: x.attention_mask,
      positionIds: x.position_ids,
      past: markPast(g, x.past_key_values),
      ...(logitsToKeep ? { logitsToKeep } : {}),
    },
    {
      levels: options.levels,
      ...(options.kvCache ? { kvCache: options.kvCache } : {}),
    },
  );
  g.output(out.logits, DECODER_OUTPUTS.names.logits);
  presentOutputsOf(g, out.present!, hkv, hd, options.kvCache === 'append' ? 'seq' : 'total');
  if (options.outputHiddenStates) {
    const f32 = (h: Value) => g.cast(h, 'float32');
    g.output(f32(out.inputsEmbeds), GRANITE_DEBUG_OUTPUTS.inputsEmbeds);
    out.layerInputs.forEach((h, i) => {
      g.output(f32(h), GRANITE_DEBUG_OUTPUTS.layerInputs(i));
    });
    out.layerOutputs.forEach((h, i) => {
      g.output(f32(h), GRANITE_DEBUG_OUTPUTS.hiddenStates(i));
    });
  }
  return rewriteDecoderModel(g, options);
}
