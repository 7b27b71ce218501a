import { type Graph, markFrameBias, nn, type Value } from '@vlmkit/onnx-graph';
import type { AttentionOp } from '../types.js';

/** The block-diagonal mask in the form the chosen op takes, built once and shared by all blocks. */
export type FrameMask = { op: 'Attention'; mask: Value } | { op: 'MultiHeadAttention'; bias: Value };

/**
 * Patches attend only within their own frame (vLLM/HF: varlen attention over
 * cu_seqlens). From per-patch frame ids [Np]: bool [1, 1, Np, Np] (true =
 * attend) for opset-23 Attention, or an additive 0 / -1e9 bias for
 * com.microsoft MultiHeadAttention (marked for onnx-graph's one-frame-attention pass).
 */
export function blockDiagonalMask(g: Graph, segmentIds: Value, op: AttentionOp, dtype: Value['dtype']): FrameMask {
  return g.scope('frame_mask', () => {
    const same = g.equal(g.unsqueeze(segmentIds, [1]), g.unsqueeze(segmentIds, [0]));
    const mask = g.unsqueeze(same, [0, 1]);
    return op === 'Attention' ? { op, mask } : { op, bias: markFrameBias(g, nn.maskToBias(g, mask, dtype), segmentIds) };
  });
}
