import { type ComputeDType, Graph, type QuantizeRequest, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { DecoderOpsOptions } from '../attention-contrib.js';
import { KV_CACHE_IO, type KvTensors, type PastName, pastFeeds, pastInputs, presentOutputsOf } from '../kv-io.js';
import type { KvCacheMode } from '../types.js';
import type { GraniteTextConfig } from './config.js';
import { buildGraniteTextDecoder } from './model.js';

export interface GraniteTextDecoderModelOptions extends DecoderOpsOptions {
  /** Level k -> the LLM layer its features are added before (`graniteDeepstackLevels(config.json)`); [] for a text-only graph. */
  levels: readonly number[];
  /** Also output `hidden_states.{i}` (layer outputs), `layer_inputs.{i}` (layer inputs after injection) and `inputs_embeds`, all [B, S, D]. */
  outputHiddenStates?: boolean;
  /**
   * Declare the int64 scalar input `logits_to_keep`: logits for the last n positions only, 0 for all (HF's
   * `logits_to_keep`). generate feeds 1, so prefill does not compute [B, S, V] logits it drops. Default false.
   */
  logitsToKeep?: boolean;
  /**
   * Block-quantized weights (MatMulNBits) for the decoder's linear layers, experts and LM head: 'int8',
   * 'int4' or options (`QuantizeOptions`); embeddings, norms and routers stay float. Default: float.
   */
  quantize?: QuantizeRequest | undefined;
  /**
   * How the KV cache inputs and outputs work (`KvCacheMode`): 'concat' (default; HF / optimum: `present.*` =
   * past + new, [B, Hkv, P+S, hd]) or 'append' (`past_key_values.*` are slot buffers [B, Hkv, C, hd] with
   * `attention_mask` [B, C+S] saying which slots are attended; `present.*` are the new rows [B, Hkv, S, hd]).
   */
  kvCache?: KvCacheMode;
  /**
   * The float type the decoder computes in (onnx-graph's `ComputeDType`, default 'float32'); weights are stored
   * in it. Inputs (`deepstack_{k}`) stay float32 and `logits` float32; the KV cache is fed and returned in
   * `kvCacheDType(computeDtype)`: float16 for float16, float32 (holding bfloat16 values) for bfloat16.
   */
  computeDtype?: ComputeDType | undefined;
  /** Graph name written into the model. */
  name?: string;
}

/** Input and output names of `buildGraniteTextDecoderModel`'s graph. */
export const GRANITE_DECODER_IO = {
  inputIds: 'input_ids',
  imagePositions: 'image_positions',
  /** Level k's packed image features; the vision encoder's outputs carry the same names. */
  deepstack: (level: number) => `deepstack_${level}` as const,
  attentionMask: 'attention_mask',
  positionIds: 'position_ids',
  past: KV_CACHE_IO.past,
  logitsToKeep: 'logits_to_keep',
  logits: 'logits',
  present: KV_CACHE_IO.present,
  hiddenStates: (layer: number) => `hidden_states.${layer}` as const,
  layerInputs: (layer: number) => `layer_inputs.${layer}` as const,
  inputsEmbeds: 'inputs_embeds',
} as const;

/** One step's inputs, as tensors of the caller's type (shapes as in `buildGraniteTextDecoderModel`). */
export interface GraniteDecoderFeedInputs<T> {
  inputIds: T;
  attentionMask: T;
  positionIds: T;
  /** One entry per layer, in layer order. */
  past: readonly KvTensors<T>[];
  /** int64 scalar; only for a graph built with `logitsToKeep`. */
  logitsToKeep?: T | undefined;
  /** The image rows and one feature block per level; required exactly when the graph has levels (N = 0 in decode steps). */
  image?: { positions: T; deepstack: readonly T[] } | undefined;
}

type GraniteDecoderInputName = (typeof GRANITE_DECODER_IO)[
  | 'inputIds'
  | 'imagePositions'
  | 'attentionMask'
  | 'positionIds'
  | 'logitsToKeep'];

/** The feeds of one run, by input name (`image_positions` and `deepstack_{k}` only for a graph with levels). */
export type GraniteDecoderFeeds<T> = Partial<Record<GraniteDecoderInputName, T>> & Record<`deepstack_${number}`, T> & Record<PastName, T>;

/** Names the feeds of one decoder run; generic over the tensor type (this package does not import onnxruntime). */
export function graniteDecoderFeeds<T>(x: GraniteDecoderFeedInputs<T>): GraniteDecoderFeeds<T> {
  const io = GRANITE_DECODER_IO;
  const feeds: GraniteDecoderFeeds<T> = {
    [io.inputIds]: x.inputIds,
    [io.attentionMask]: x.attentionMask,
    [io.positionIds]: x.positionIds,
  };
  if (x.logitsToKeep !== undefined) feeds[io.logitsToKeep] = x.logitsToKeep;
  if (x.image) {
    feeds[io.imagePositions] = x.image.positions;
    x.image.deepstack.forEach((t, k) => {
      feeds[io.deepstack(k)] = t;
    });
  }
  return Object.assign(feeds, pastFeeds(x.past));
}

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
  const g = new Graph({ name: options.name ?? 'granite_text_decoder', quantize: options.quantize, computeDtype: options.computeDtype });
  const { hiddenSize: D, numKeyValueHeads: hkv, headDim: hd } = config;
  const io = GRANITE_DECODER_IO;
  const inputIds = g.input(io.inputIds, 'int64', ['batch', 'seq']);
  const imagePositions = options.levels.length > 0 ? g.input(io.imagePositions, 'int64', ['image_tokens']) : undefined;
  const deepstack = options.levels.map((_, k) => g.input(io.deepstack(k), 'float32', ['image_tokens', D]));
  const attentionMask = g.input(io.attentionMask, 'int64', ['batch', 'total']);
  const positionIds = g.input(io.positionIds, 'int64', ['batch', 'seq']);
  const past = pastInputs(g, config.numHiddenLayers, hkv, hd);
  const logitsToKeep = options.logitsToKeep ? g.input(io.logitsToKeep, 'int64', []) : undefined;
  const out = buildGraniteTextDecoder(
    g,
    weights,
    config,
    {
      inputIds,
      ...(imagePositions ? { imagePositions, deepstack } : {}),
      attentionMask,
      positionIds,
      past,
      ...(logitsToKeep ? { logitsToKeep } : {}),
    },
    {
      levels: options.levels,
      ...(options.kvCache ? { kvCache: options.kvCache } : {}),
      ...(options.ops ? { ops: options.ops } : {}),
      ...(options.attentionKernel ? { attentionKernel: options.attentionKernel } : {}),
    },
  );
  g.output(out.logits, io.logits);
  presentOutputsOf(g, out.present!, hkv, hd, options.kvCache === 'append' ? 'seq' : 'total');
  if (options.outputHiddenStates) {
    const f32 = (h: Value) => g.cast(h, 'float32');
    g.output(f32(out.inputsEmbeds), io.inputsEmbeds);
    out.layerInputs.forEach((h, i) => {
      g.output(f32(h), io.layerInputs(i));
    });
    out.layerOutputs.forEach((h, i) => {
      g.output(f32(h), io.hiddenStates(i));
    });
  }
  return g;
}
