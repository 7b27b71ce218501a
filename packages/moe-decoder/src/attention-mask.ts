import type { Graph, Value } from '@vlmkit/onnx-graph';

/**
 * The attention mask of a decoder step as the opset-23 Attention op takes
 * it: bool [B, 1, S, T], true = attend. `paddingMask` is [B, T] int64 over
 * past + current positions (1 = real token, 0 = padding, left padded); the
 * S queries are the last S of the T positions. A query sees key j when j is
 * not after it (causal) and j is a real token; every query also sees itself,
 * so a padded query row is never empty and no NaN appears (its output is
 * ignored, as HF's is).
 */
export function causalPaddingMask(g: Graph, paddingMask: Value, queries: Value): Value {
  return g.scope('attention_mask', () => {
    const zero = g.scalar(0, 'int64');
    const one = g.scalar(1, 'int64');
    const total = g.squeeze(g.shapeOf(paddingMask, 1, 2), [0]);
    const seq = g.squeeze(g.shapeOf(queries, 1, 2), [0]);
    const T = paddingMask.dim(1);
    const S = queries.dim(1);
    const keyPos = g.unsqueeze(g.range(zero, total, one, T), [0]); // [1, T]
    const queryPos = g.unsqueeze(g.range(g.sub(total, seq), total, one, S), [1]); // [S, 1]
    const causal = g.lessOrEqual(keyPos, queryPos); // [S, T]
    const self = g.equal(keyPos, queryPos);
    const real = g.unsqueeze(g.cast(paddingMask, 'bool'), [1, 2]); // [B, 1, 1, T]
    return g.or(g.and(causal, real), self);
  });
}
