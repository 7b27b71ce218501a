// Types shared by the ERNIE and Granite decoders.
import type { OpSet, Value } from '@vlmkit/onnx-graph';

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
 * A decoder builder's choice of ops for its norms and routed experts (see `OpSet`). Attention is always built
 * with the opset-23 ops; onnx-graph's `CONTRIB_PASSES` fuse it after building.
 */
export interface DecoderOpsOptions {
  /** 'onnx' (default): opset-23 RMSNormalization; 'contrib': com.microsoft fused norms and experts. */
  ops?: OpSet;
}
