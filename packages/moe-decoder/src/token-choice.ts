// The next token of each row, chosen in the graph: the host sampler's steps (@vlmkit/models sampling.ts
// sampleToken) as ops, so an in-graph decode loop picks the ids the host loop picks.
import type { Graph, Value } from '@vlmkit/onnx-graph';

/** Greedy: the argmax of each row of `logits` [B, V], ties to the lowest id (torch.argmax, the host's argmax). */
export function greedyTokens(g: Graph, logits: Value): Value {
  return g.scope('greedy', () => g.argmax(logits, -1));
}

export interface SamplingInputs {
  /** float64 scalar > 0. */
  temperature: Value;
  /** int64 scalar: keep the k most likely ids (0: all). */
  topK: Value;
  /** float64 scalar in (0, 1]: keep the fewest ids whose probability reaches p (1: all). */
  topP: Value;
  /** float64 [B]: the uniform number in [0, 1) each row draws. */
  uniform: Value;
}

/**
 * Temperature / top-k / top-p sampling of each row of `logits` [B, V], in the host sampler's order and
 * arithmetic (float64): ids sorted by logit descending, ties by id (TopK's order); the first k kept; softmax
 * of (l - max) / T normalised by the sequential sum; cut after the first id whose running sum reaches p; then
 * r = u * (sum of the kept probabilities) and the first id where r minus the running sum drops to <= 0 (the
 * last kept id if none). Sums are CumSums, sequential as the host's loops; only Exp may differ from
 * JavaScript's Math.exp in the last bit.
 */
export function sampledTokens(g: Graph, logits: Value, x: SamplingInputs): Value {
  return g.scope('sample', () => {
    const V = logits.dim(1);
    const vocab = g.shapeOf(logits, 1, 2); // int64 [1]
    const topK = g.reshape(x.topK, [1]);
    const k = g.where(g.greater(topK, 0), g.min(topK, vocab), vocab); // int64 [1]
    const [sorted, ids] = g.topk(g.cast(logits, 'float64'), k, -1); // [B, k], descending, ties by id
    const first = g.slice(sorted, [0], [1], [1]); // [B, 1]: the max
    const e = g.exp(g.div(g.sub(sorted, first), x.temperature));
    const sum = (t: Value) => g.slice(g.cumsum(t, 1), [-1], [Number.MAX_SAFE_INTEGER], [1]); // [B, 1], sequential
    const probs = g.div(e, sum(e));
    const acc = g.cumsum(probs, 1);
    // Top-p: n = 1 + (ids whose running sum is still below p), at most k; all k when p is 1.
    const below = g.reduceSum(g.cast(g.less(acc, x.topP), 'int64'), [1]); // [B, 1]
    const kk = g.unsqueeze(k, [0]); // [1, 1]
    const n = g.where(g.less(x.topP, 1), g.min(g.add(below, 1), kk), kk); // [B, 1]
    const total = g.gatherElements(acc, g.sub(n, 1), 1); // [B, 1]: the kept probabilities' sequential sum
    const r = g.mul(g.unsqueeze(x.uniform, [1]), total);
    // r - p0 - p1 - ... as the host subtracts, one running value per id: [B, k]
    const rest = g.slice(g.cumsum(g.concat([r, g.neg(probs)], 1), 1), [1], [Number.MAX_SAFE_INTEGER], [1]);
    const kept = g.less(g.range(g.scalar(0, 'int64'), g.squeeze(k, [0]), g.scalar(1, 'int64'), V), n); // [B, k]
    const positive = g.reduceSum(g.cast(g.and(g.greater(rest, 0), kept), 'int64'), [1]); // [B, 1]
    const pick = g.min(positive, g.sub(n, 1));
    return g.squeeze(g.gatherElements(ids, pick, 1), [1]);
  });
}
