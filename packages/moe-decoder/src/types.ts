// Types shared by the ERNIE and Granite decoders.
import type { Value } from '@vlmkit/onnx-graph';

/** One layer's KV cache: [B, Hkv, P, headDim] float32. */
export interface KvPair {
  key: Value;
  value: Value;
}

/** One parameter a builder reads: its component-local name and shape (PyTorch [out, in] for linears); onnx-graph's, derived from the builders. */
export type { ParameterSpec } from '@vlmkit/onnx-graph';
