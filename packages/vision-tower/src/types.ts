/** A parameter a component reads: its name (relative to the component) and shape (onnx-graph's, derived from the builders). */
export type { ParameterSpec } from '@vlmkit/onnx-graph';

/**
 * Which attention kernel a tower's layers use: ONNX opset-23 `Attention` or
 * com.microsoft `MultiHeadAttention` (faster on ORT CPU; see README).
 */
export type AttentionOp = 'Attention' | 'MultiHeadAttention';
