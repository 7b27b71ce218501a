import { type ComputeDType, floatData } from '../dtype.js';
import { Graph } from '../graph.js';
import type { Value } from '../value.js';
import { type Feed, randn } from './ort.js';

/** Sizes and choices of `decoderAttentionGraph`. */
export interface AttentionGraphOptions {
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  computeDtype?: ComputeDType;
  /** In 16-bit: rotate in float32 between Casts (HF ERNIE), else cast the tables (HF Granite). */
  rotaryInFloat32?: boolean;
  interleaved?: boolean;
  /** Rotary on q and k (the contrib pattern); false: the Attention reads the projections as they are. */
  rotary?: boolean;
  /** Return each layer's present key / value ('concat'); false: only the outputs ('append'). */
  returnPresent?: boolean;
  /** Build the layers inside the then-branch of an If (a pass must rewrite bodies too). */
  inIf?: boolean;
}

/**
 * A decoder's self-attention as moe-decoder's `selfAttention` writes it, without the projections: per layer
 * q, k, v inputs [B, S, H*hd], rotary (opset-23 RotaryEmbedding with per-token tables [B, S, hd/2]), opset-23
 * Attention with a causal + padding bool mask [B, 1, S, P + S] and past key / value [B, Hkv, P, hd]. Float
 * inputs are float32, cast to the compute dtype inside; outputs float32.
 */
export function decoderAttentionGraph(o: AttentionGraphOptions): Graph {
  const g = new Graph({ computeDtype: o.computeDtype ?? 'float32' });
  const dt = g.computeDtype;
  const [hq, hkv, hd] = [o.heads, o.kvHeads, o.headDim];
  const mask = g.input('attention_mask', 'int64', ['batch', 'total']);
  const tables = ['rope_cos', 'rope_sin'].map((n) => g.input(n, 'float32', ['batch', 'seq', hd / 2]));
  const layers = Array.from({ length: o.layers }, (_, i) => ({
    q: g.cast(g.input(`q.${i}`, 'float32', ['batch', 'seq', hq * hd]), dt),
    k: g.cast(g.input(`k.${i}`, 'float32', ['batch', 'seq', hkv * hd]), dt),
    v: g.cast(g.input(`v.${i}`, 'float32', ['batch', 'seq', hkv * hd]), dt),
    // The cache is fed in the compute dtype, as a decoder's (a Cast would let ORT write present over past).
    pastKey: g.input(`past.${i}.key`, dt, ['batch', hkv, 'past', hd]),
    pastValue: g.input(`past.${i}.value`, dt, ['batch', hkv, 'past', hd]),
  }));
  const build = (b: Graph): Value[] => {
    const bool = b.scope('attention_mask', () => causalPaddingMask(b, mask, layers[0]!.q));
    return layers.flatMap((x, i) =>
      b.scope(`layers.${i}.self_attn`, () => {
        const rotary = (t: Value, numHeads: number) =>
          b.scope('rotary_emb', () => {
            const d = o.rotaryInFloat32 ? 'float32' : t.dtype;
            const [cos, sin] = tables.map((c) => b.cast(c, d)) as [Value, Value];
            return b.cast(b.rotaryEmbedding(b.cast(t, d), cos, sin, { interleaved: o.interleaved ?? false, numHeads }), t.dtype);
          });
        const [q, k] = o.rotary === false ? [x.q, x.k] : [rotary(x.q, hq), rotary(x.k, hkv)];
        const r = b.scope('attn', () =>
          b.attention(q, k, x.v, {
            qNumHeads: hq,
            kvNumHeads: hkv,
            scale: hd ** -0.5,
            mask: bool,
            pastKey: x.pastKey,
            pastValue: x.pastValue,
          }),
        );
        const f32 = (t: Value) => b.cast(t, 'float32');
        return o.returnPresent === false ? [f32(r.out)] : [f32(r.out), f32(r.presentKey!), f32(r.presentValue!)];
      }),
    );
  };
  const outs = o.inIf ? g.if(g.constant('bool', [], [1]), build, build) : build(g);
  outs.forEach((v, i) => {
    g.output(v, `out.${i}`);
  });
  return g;
}

/** bool [B, 1, S, T]: query i (the last S of T positions) sees key j <= i that is not padding, and itself. */
function causalPaddingMask(g: Graph, paddingMask: Value, queries: Value): Value {
  const [zero, one] = [g.scalar(0, 'int64'), g.scalar(1, 'int64')];
  const total = g.squeeze(g.shapeOf(paddingMask, 1, 2), [0]);
  const keyPos = g.unsqueeze(g.range(zero, total, one, paddingMask.dim(1)), [0]);
  const queryPos = g.unsqueeze(g.range(g.sub(total, g.squeeze(g.shapeOf(queries, 1, 2), [0])), total, one, queries.dim(1)), [1]);
  const real = g.unsqueeze(g.cast(paddingMask, 'bool'), [1, 2]);
  return g.or(g.and(g.lessOrEqual(keyPos, queryPos), real), g.equal(keyPos, queryPos));
}

/**
 * Random feeds for `decoderAttentionGraph`: batch B, S new positions after P cached ones; row 1 (if any) left
 * padded by 2, and cache slots of padding hold junk (the mask must keep them out).
 */
export function attentionFeeds(o: AttentionGraphOptions, B: number, S: number, P: number, seed = 1): Record<string, Feed> {
  const [hq, hkv, hd] = [o.heads, o.kvHeads, o.headDim];
  const T = P + S;
  const f32 = (dims: number[], s: number): Feed => ({
    dtype: 'float32',
    dims,
    data: randn(
      dims.reduce((a, b) => a * b, 1),
      s,
    ),
  });
  const cache = (dims: number[], s: number): Feed =>
    o.computeDtype === 'float16' ? { dtype: 'float16', dims, data: floatData('float16', f32(dims, s).data as Float32Array) } : f32(dims, s);
  const angles = randn(B * S * (hd / 2), seed + 7).map((a) => a * 3);
  const feeds: Record<string, Feed> = {
    attention_mask: { dtype: 'int64', dims: [B, T], data: Array.from({ length: B * T }, (_, n) => (n >= T && n < T + 2 ? 0 : 1)) },
    rope_cos: { dtype: 'float32', dims: [B, S, hd / 2], data: angles.map(Math.cos) },
    rope_sin: { dtype: 'float32', dims: [B, S, hd / 2], data: angles.map(Math.sin) },
  };
  for (let i = 0; i < o.layers; i++) {
    const s = seed * 100 + i * 10;
    feeds[`q.${i}`] = f32([B, S, hq * hd], s);
    feeds[`k.${i}`] = f32([B, S, hkv * hd], s + 1);
    feeds[`v.${i}`] = f32([B, S, hkv * hd], s + 2);
    feeds[`past.${i}.key`] = cache([B, hkv, P, hd], s + 3);
    feeds[`past.${i}.value`] = cache([B, hkv, P, hd], s + 4);
  }
  return feeds;
}
