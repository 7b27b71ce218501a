// Types shared by the ERNIE and Granite decoders.
import type { GraphPass, QuantizeRequest, Value } from '@vlmkit/onnx-graph';

/** One layer's KV cache: [B, Hkv, P, headDim] float32. */
export interface KvPair {
  key: Value;
  value: Value;
}

/** One parameter a builder reads: its component-local name and shape (PyTorch [out, in] for linears); onnx-graph's, derived from the builders. */
export type { ParameterSpec } from '@vlmkit/onnx-graph';

/**
 * How a decoder graph's KV cache inputs and outputs work.
 * - 'concat' (HF / optimum): `past_key_values.*` hold the P cached positions; `present.*` are past + the new
 *   positions [B, Hkv, P + S, hd], which the caller feeds back (a copy of the whole cache per step).
 * - 'append': `past_key_values.*` are the caller's cache buffers [B, Hkv, C, hd] with C slots, used or not
 *   (`attention_mask` [B, C + S] says which slots are attended); `present.*` are the new positions only
 *   [B, Hkv, S, hd], which the caller writes into free slots. No step copies the cache (runtime's KvCache with
 *   `capacity`).
 */
export type KvCacheMode = 'concat' | 'append';

/**
 * What a complete decoder graph's builder runs on the graph it built: optimizations are rewrite passes (onnx-graph
 * `PASSES`), chosen per device by models' profiles (`decoderPasses`), not builder options.
 */
export interface DecoderPassOptions {
  /**
   * Rewrites run in order on the built graph (e.g. `CONTRIB_PASSES`, `APPEND_ATTENTION_PASSES`). Default: none.
   * A 16-bit decoder is the float32 one converted by `floatConvertPass`, first: the KV cache is then fed and
   * returned in `kvCacheDType`, the other float inputs and `logits` stay float32.
   */
  passes?: readonly GraphPass[] | undefined;
}

/** What both complete decoder graphs (`buildErnieTextDecoderModel`, `buildGraniteTextDecoderModel`) take. */
export interface DecoderModelOptions extends DecoderPassOptions {
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
  /** Graph name written into the model. */
  name?: string;
}
