import { type ComputeDType, Graph, type QuantizeRequest, type Weights } from '@vlmkit/onnx-graph';
import type { DecoderOpsOptions } from '../attention-contrib.js';
import { KV_CACHE_IO, type KvTensors, type PastName, pastFeeds, pastInputs, presentOutputsOf } from '../kv-io.js';
import type { KvCacheMode } from '../types.js';
import type { ErnieTextConfig } from './config.js';
import { buildErnieTextDecoder } from './model.js';
import type { ExpertsImpl } from './moe.js';

export interface ErnieTextDecoderModelOptions extends DecoderOpsOptions {
  /** How MoE layers run their routed experts: 'sparse' (default, only the chosen ones) or 'all' (every expert, weighted). */
  experts?: ExpertsImpl;
  /** Also output each layer's hidden state as `hidden_states.{i}` [B, S, D] (tests, debugging). */
  outputHiddenStates?: boolean;
  /** Also output each MoE layer's routing as `router.{i}.topk_ids` [B*S, k] int64 and `router.{i}.topk_weights` [B*S, k]. */
  outputRouting?: boolean;
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
   * in it. Inputs (`vision_embeds`, rope tables) stay float32 and `logits` float32; the KV cache is fed and
   * returned in `kvCacheDType(computeDtype)`: float16 for float16, float32 (holding bfloat16 values) for bfloat16.
   */
  computeDtype?: ComputeDType | undefined;
  /** Graph name written into the model. */
  name?: string;
}

/** Input and output names of `buildErnieTextDecoderModel`'s graph. */
export const ERNIE_DECODER_IO = {
  inputIds: 'input_ids',
  visionEmbeds: 'vision_embeds',
  visionPositions: 'vision_positions',
  moeTokenType: 'moe_token_type',
  attentionMask: 'attention_mask',
  ropeCos: 'rope_cos',
  ropeSin: 'rope_sin',
  past: KV_CACHE_IO.past,
  logitsToKeep: 'logits_to_keep',
  logits: 'logits',
  present: KV_CACHE_IO.present,
  hiddenStates: (layer: number) => `hidden_states.${layer}` as const,
  routerTopkIds: (layer: number) => `router.${layer}.topk_ids` as const,
  routerTopkWeights: (layer: number) => `router.${layer}.topk_weights` as const,
} as const;

/** One step's inputs, as tensors of the caller's type (shapes as in `buildErnieTextDecoderModel`). */
export interface ErnieDecoderFeedInputs<T> {
  inputIds: T;
  visionEmbeds: T;
  visionPositions: T;
  moeTokenType: T;
  attentionMask: T;
  ropeCos: T;
  ropeSin: T;
  /** One entry per layer, in layer order. */
  past: readonly KvTensors<T>[];
  /** int64 scalar; only for a graph built with `logitsToKeep`. */
  logitsToKeep?: T | undefined;
}

type ErnieDecoderInputName = (typeof ERNIE_DECODER_IO)[
  | 'inputIds'
  | 'visionEmbeds'
  | 'visionPositions'
  | 'moeTokenType'
  | 'attentionMask'
  | 'ropeCos'
  | 'ropeSin'
  | 'logitsToKeep'];

/** The feeds of one run, by input name. */
export type ErnieDecoderFeeds<T> = Record<Exclude<ErnieDecoderInputName, 'logits_to_keep'>, T> &
  Partial<Record<'logits_to_keep', T>> &
  Record<PastName, T>;

/** Names the feeds of one decoder run; generic over the tensor type (this package does not import onnxruntime). */
export function ernieDecoderFeeds<T>(x: ErnieDecoderFeedInputs<T>): ErnieDecoderFeeds<T> {
  const io = ERNIE_DECODER_IO;
  return {
    [io.inputIds]: x.inputIds,
    [io.visionEmbeds]: x.visionEmbeds,
    [io.visionPositions]: x.visionPositions,
    [io.moeTokenType]: x.moeTokenType,
    [io.attentionMask]: x.attentionMask,
    [io.ropeCos]: x.ropeCos,
    [io.ropeSin]: x.ropeSin,
    ...(x.logitsToKeep !== undefined ? { [io.logitsToKeep]: x.logitsToKeep } : {}),
    ...pastFeeds(x.past),
  };
}

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
  const g = new Graph({ name: options.name ?? 'ernie_text_decoder', quantize: options.quantize, computeDtype: options.computeDtype });
  const { hiddenSize: D, numKeyValueHeads: hkv, headDim: hd } = config;
  const io = ERNIE_DECODER_IO;
  const inputIds = g.input(io.inputIds, 'int64', ['batch', 'seq']);
  const visionEmbeds = g.input(io.visionEmbeds, 'float32', ['vision_tokens', D]);
  const visionPositions = g.input(io.visionPositions, 'int64', ['vision_tokens']);
  const moeTokenType = g.input(io.moeTokenType, 'int64', ['batch', 'seq']);
  const attentionMask = g.input(io.attentionMask, 'int64', ['batch', 'total']);
  const ropeCos = g.input(io.ropeCos, 'float32', ['batch', 'seq', hd / 2]);
  const ropeSin = g.input(io.ropeSin, 'float32', ['batch', 'seq', hd / 2]);
  const past = pastInputs(g, config.numHiddenLayers, hkv, hd);
  const logitsToKeep = options.logitsToKeep ? g.input(io.logitsToKeep, 'int64', []) : undefined;
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
      ...(logitsToKeep ? { logitsToKeep } : {}),
    },
    {
      routing: options.outputRouting ?? false,
      ...(options.experts ? { experts: options.experts } : {}),
      ...(options.kvCache ? { kvCache: options.kvCache } : {}),
      ...(options.ops ? { ops: options.ops } : {}),
      ...(options.attentionKernel ? { attentionKernel: options.attentionKernel } : {}),
    },
  );
  g.output(out.logits, io.logits);
  presentOutputsOf(g, out.present!, hkv, hd, options.kvCache === 'append' ? 'seq' : 'total');
  if (options.outputHiddenStates)
    out.layerOutputs.forEach((h, i) => {
      g.output(g.cast(h, 'float32'), io.hiddenStates(i));
    });
  out.routing.forEach((r, i) => {
    if (r === undefined) return;
    g.output(r.topkIds, io.routerTopkIds(i));
    g.output(r.topkWeights, io.routerTopkWeights(i));
  });
  return g;
}
