/** A parameter a component reads: its name (relative to the component) and shape. */
export interface ParameterSpec {
  name: string;
  shape: number[];
}

/**
 * Which attention kernel a tower's layers use: ONNX opset-23 `Attention` or
 * com.microsoft `MultiHeadAttention` (faster on ORT CPU; see README).
 */
export type AttentionOp = 'Attention' | 'MultiHeadAttention';
