import { GraphError } from './errors.js';
import type { Graph } from './graph.js';
import type { Value } from './value.js';

/** The sizes `stepAttention` needs (static: the reshapes into heads are built from them). */
export interface StepAttentionSizes {
  numHeads: number;
  kvNumHeads: number;
  headDim: number;
  /** Softmax scale, applied to the scores (as ONNX Attention and PyTorch's sdpa do). */
  scale: number;
}

/** One attention's values over a KV cache, as `stepAttention` and `causalChunkedAttention` take them. */
export interface CachedAttentionInputs {
  /** [B, S, H*hd], rotated. */
  q: Value;
  /** [B, S, Hkv*hd]: the new positions' keys (rotated) and values. */
  k: Value;
  v: Value;
  /** [B, Hkv, C, hd] each: the cache. */
  past: { key: Value; value: Value };
  /** bool [B, 1, S, C + S], true = attend, cache slots first. */
  mask: Value;
}

/**
 * Grouped-query attention of one new position per row over a KV cache, without copying the cache: scores
 * against the cache and against the new key, one softmax over both, then the cache's weighted values plus the
 * new value's. The numbers of ONNX Attention with past key/value (up to float summation order), which also
 * writes past + new into its present outputs: a copy of the whole cache per layer and step, the dominant
 * cost of a decode step at long contexts on ORT's CPU EP (figures in docs/design-notes.md).
 *
 * - `q` [B, 1, H*hd], `k` / `v` [B, 1, Hkv*hd] (the new position, rotated);
 * - `past.key` / `past.value` [B, Hkv, C, hd];
 * - `mask` bool [B, 1, 1, C + 1], true = attend, cache slots first, the new position last.
 *
 * Returns [B, 1, H*hd] with `q`'s shape. Query head h reads KV head floor(h / (H / Hkv)), as ONNX Attention
 * and HF's repeat_kv group them. A masked score is the dtype's lowest value, not -inf, so a row with every key
 * masked averages the values instead of giving NaN (HF's eager masks do the same).
 */
export function stepAttention(g: Graph, { q, k, v, past, mask }: CachedAttentionInputs, sizes: StepAttentionSizes): Value {
  const { numHeads: h, kvNumHeads: hkv, headDim: hd, scale } = sizes;
  if (h % hkv !== 0) throw new GraphError('SHAPE_MISMATCH', `query heads ${h} are not a multiple of KV heads ${hkv}`);
  if (q.dtype !== 'float32') throw new GraphError('DTYPE_MISMATCH', `stepAttention computes in float32, got ${q}`);
  const group = h / hkv;
  return g.scope('step_attn', () => {
    // [B, 1, H*hd] -> [B, Hkv, G, hd]: the G query heads of one KV head are the rows of one matmul.
    const qh = g.reshape(q, [0, hkv, group, hd]);
    const kNew = g.reshape(k, [0, hkv, 1, hd]);
    const vNew = g.reshape(v, [0, hkv, 1, hd]);
    const scores = g.concat([g.matmul(qh, g.transpose(past.key, [0, 1, 3, 2])), g.matmul(qh, g.transpose(kNew, [0, 1, 3, 2]))], -1);
    const lowest = g.constant('float32', [], [-3.4028234663852886e38]);
    // mask [B, 1, 1, C+1] broadcasts over [B, Hkv, G, C+1].
    const p = g.softmax(g.where(mask, g.mul(scores, g.constant('float32', [], [scale])), lowest), -1);
    const fromCache = g.matmul(g.slice(p, [0], [-1], [3]), past.value);
    const fromNew = g.mul(g.slice(p, [-1], [Number.MAX_SAFE_INTEGER], [3]), vNew);
    return g.reshape(g.add(fromCache, fromNew), [0, 1, h * hd], q.shape);
  });
}

/**
 * Causal grouped-query attention of a prompt (S new positions per row after a cache of C slots) in `chunks`
 * blocks of query rows, each block against only the keys it can see: rows [j*h, (j+1)*h) read the cache and
 * the first (j+1)*h new keys (h = floor(S / chunks); the last block takes the remainder and every key). The
 * score and weighted-sum work falls to (chunks + 1) / (2 * chunks) of one ONNX Attention over all keys (ORT's
 * CPU kernel computes every score and masks afterwards), with that op's numbers: each block is the op on its
 * rows, the keys it drops are masked for them anyway.
 *
 * `mask` bool [B, 1, S, C + S] must be causal in the new positions (row i attends to no new key after i):
 * a decoder's causal + padding mask. Other arguments as `stepAttention`; q [B, S, H*hd], k/v [B, S, Hkv*hd].
 * Needs S >= chunks (smaller prompts: one op).
 */
export function causalChunkedAttention(
  g: Graph,
  { q, k, v, past, mask }: CachedAttentionInputs,
  sizes: StepAttentionSizes,
  chunks: number,
): Value {
  const { numHeads, kvNumHeads, scale } = sizes;
  if (!Number.isInteger(chunks) || chunks < 2)
    throw new GraphError('BAD_ARGUMENT', `causalChunkedAttention needs chunks >= 2, got ${chunks}`);
  return g.scope('chunked_attn', () => {
    const i64 = (x: number) => g.constant('int64', [1], [x]);
    const S = g.shapeOf(q, 1, 2);
    const C = g.shapeOf(past.key, 2, 3);
    const h = g.div(S, i64(chunks));
    const last = g.sub(S, g.mul(h, i64(chunks - 1)));
    const rows = g.concat([...Array.from({ length: chunks - 1 }, () => h), last], 0);
    const qRows = g.splitDynamic(q, rows, chunks, 1);
    const maskRows = g.splitDynamic(mask, rows, chunks, 2);
    const outs = qRows.map((qj, j) => {
      const attend = (keys: Value, values: Value, m: Value) =>
        g.attention(qj, keys, values, { qNumHeads: numHeads, kvNumHeads, scale, mask: m, pastKey: past.key, pastValue: past.value }).out;
      if (j === chunks - 1) return attend(k, v, maskRows[j]!);
      const seen = g.mul(h, i64(j + 1));
      const cut = g.concat([seen, g.sub(S, seen)], 0);
      const [kj] = g.splitDynamic(k, cut, 2, 1);
      const [vj] = g.splitDynamic(v, cut, 2, 1);
      const [mj] = g.splitDynamic(maskRows[j]!, g.concat([g.add(C, seen), g.sub(S, seen)], 0), 2, 3);
      return attend(kj!, vj!, mj!);
    });
    return g.reshape(g.concat(outs, 1), [0, 0, numHeads * sizes.headDim], q.shape);
  });
}
