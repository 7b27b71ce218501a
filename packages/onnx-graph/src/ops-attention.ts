import { GraphError } from './errors.js';
import type { Graph } from './graph.js';
import { flagAttr, floatAttr, intAttr, MS_DOMAIN } from './graph-core.js';
import { sameDType } from './op-checks.js';
import { type Dim, dimsCompatible } from './shape.js';
import type { Value } from './value.js';

export interface AttentionOptions {
  /** Heads of q; required when q/k/v are 3-D [B, S, H*hd]. */
  qNumHeads?: number;
  /** Heads of k/v (GQA when fewer than qNumHeads). */
  kvNumHeads?: number;
  /** Softmax scale; default 1/sqrt(head_dim). */
  scale?: number;
  /** Bool mask (true = attend) or additive float mask, broadcastable to [B, Hq, S, T]. */
  mask?: Value;
  isCausal?: boolean;
  pastKey?: Value;
  pastValue?: Value;
}

export interface AttentionResult {
  out: Value;
  presentKey: Value | undefined;
  presentValue: Value | undefined;
}

/**
 * Attention ops, methods of `Graph` (graph.ts mixes them in): ONNX opset-23 Attention and RotaryEmbedding,
 * com.microsoft MultiHeadAttention and GroupQueryAttention.
 */
export class AttentionOps {
  /**
   * ONNX Attention (opset 23). 4-D inputs are [B, H, S, hd]; 3-D inputs are
   * [B, S, H*hd] and need qNumHeads/kvNumHeads. With past key/value
   * [B, Hkv, P, hd], present key/value [B, Hkv, P+S, hd] are returned.
   */
  attention(this: Graph, q: Value, k: Value, v: Value, opts: AttentionOptions = {}): AttentionResult {
    const name = this.nodeName('Attention');
    sameDType(name, q, k, v);
    if (q.rank !== k.rank || q.rank !== v.rank || (q.rank !== 3 && q.rank !== 4)) {
      throw new GraphError('RANK_MISMATCH', `Attention takes 3-D or 4-D q/k/v of one rank, got ${q}, ${k}, ${v}`, name);
    }
    let hq: Dim;
    let hkv: Dim;
    let hd: Dim;
    let hdV: Dim;
    if (q.rank === 4) {
      [hq, hkv, hd, hdV] = [q.dim(1), k.dim(1), q.dim(3), v.dim(3)];
      if (!dimsCompatible(q.dim(3), k.dim(3))) throw new GraphError('SHAPE_MISMATCH', `q and k head sizes differ: ${q}, ${k}`, name);
    } else {
      if (opts.qNumHeads === undefined || opts.kvNumHeads === undefined) {
        throw new GraphError('BAD_ARGUMENT', '3-D Attention inputs need qNumHeads and kvNumHeads', name);
      }
      [hq, hkv] = [opts.qNumHeads, opts.kvNumHeads];
      const qh = q.dim(2);
      hd = typeof qh === 'number' ? qh / opts.qNumHeads : this.freshDim('hd');
      const vh = v.dim(2);
      hdV = typeof vh === 'number' ? vh / opts.kvNumHeads : this.freshDim('hd');
      if (typeof hd === 'number' && !Number.isInteger(hd))
        throw new GraphError('SHAPE_MISMATCH', `${q} is not divisible into ${hq} heads`, name);
    }
    if (typeof hq === 'number' && typeof hkv === 'number' && hq % hkv !== 0) {
      throw new GraphError('SHAPE_MISMATCH', `q heads ${hq} not a multiple of kv heads ${hkv}`, name);
    }
    if (opts.mask && opts.mask.dtype !== 'bool' && opts.mask.dtype !== q.dtype) {
      throw new GraphError('DTYPE_MISMATCH', `mask must be bool or ${q.dtype}, got ${opts.mask}`, name);
    }
    const hasPast = opts.pastKey !== undefined;
    if (hasPast !== (opts.pastValue !== undefined))
      throw new GraphError('BAD_ARGUMENT', 'pass both pastKey and pastValue or neither', name);
    const b = q.dim(0);
    const s = q.rank === 4 ? q.dim(2) : q.dim(1);
    const kvLen = k.rank === 4 ? k.dim(2) : k.dim(1);
    const total: Dim = hasPast ? addDims(opts.pastKey!.dim(2), kvLen) : kvLen;
    const outShape =
      q.rank === 4 ? [b, hq, s, hdV] : [b, s, typeof hq === 'number' && typeof hdV === 'number' ? hq * hdV : this.freshDim('hv')];
    const outs = [
      { dtype: q.dtype, shape: outShape },
      ...(hasPast
        ? [
            { dtype: q.dtype, shape: [b, hkv, total, hd] },
            { dtype: q.dtype, shape: [b, hkv, total, hdV] },
          ]
        : []),
    ];
    const [out, pk, pv] = this.emit(
      'Attention',
      [q, k, v, opts.mask, opts.pastKey, opts.pastValue],
      outs,
      {
        is_causal: flagAttr(opts.isCausal),
        q_num_heads: intAttr(opts.qNumHeads),
        kv_num_heads: intAttr(opts.kvNumHeads),
        scale: floatAttr(opts.scale),
      },
      '',
      name,
    );
    return { out: out!, presentKey: pk, presentValue: pv };
  }

  /**
   * com.microsoft MultiHeadAttention on [B, S, H*hd] q/k/v. `attentionBias`
   * is additive, broadcastable [B|1, H|1, S, T]. Faster than the opset-23
   * op on ORT's CPU and CUDA EPs.
   */
  multiHeadAttention(
    this: Graph,
    q: Value,
    k: Value,
    v: Value,
    opts: { numHeads: number; scale?: number; attentionBias?: Value; pastKey?: Value; pastValue?: Value },
  ): AttentionResult {
    const name = this.nodeName('MultiHeadAttention');
    sameDType(name, q, k, v);
    if (q.rank !== 3) throw new GraphError('RANK_MISMATCH', `MultiHeadAttention takes [B, S, H*hd], got ${q}`, name);
    const hidden = q.dim(2);
    const hd: Dim = typeof hidden === 'number' ? hidden / opts.numHeads : this.freshDim('hd');
    const hasPast = opts.pastKey !== undefined;
    const total: Dim = hasPast ? addDims(opts.pastKey!.dim(2), k.dim(1)) : k.dim(1);
    const outs = [
      // v [B, S, H*hd], or [B, H, T, hd] (k/v already in heads: no past then).
      { dtype: q.dtype, shape: [q.dim(0), q.dim(1), v.rank === 4 ? mulDim(opts.numHeads, v.dim(3)) : v.dim(2)] },
      ...(hasPast
        ? [
            { dtype: q.dtype, shape: [q.dim(0), opts.numHeads, total, hd] },
            { dtype: q.dtype, shape: [q.dim(0), opts.numHeads, total, hd] },
          ]
        : []),
    ];
    const [out, pk, pv] = this.emit(
      'MultiHeadAttention',
      [q, k, v, undefined, undefined, opts.attentionBias, opts.pastKey, opts.pastValue],
      outs,
      { num_heads: { int: opts.numHeads }, scale: floatAttr(opts.scale) },
      MS_DOMAIN,
      name,
    );
    return { out: out!, presentKey: pk, presentValue: pv };
  }

  /**
   * com.microsoft GroupQueryAttention: causal GQA with a KV cache laid out
   * [B, Hkv, maxLen, hd]; `seqlensK` int32 [B] (total length - 1 per row),
   * `totalSequenceLength` int32 scalar. ORT's contract assumes right padding.
   */
  groupQueryAttention(
    this: Graph,
    q: Value,
    k: Value,
    v: Value,
    pastKey: Value,
    pastValue: Value,
    seqlensK: Value,
    totalSequenceLength: Value,
    opts: { numHeads: number; kvNumHeads: number; scale?: number; cos?: Value; sin?: Value; interleaved?: boolean },
  ): AttentionResult {
    const name = this.nodeName('GroupQueryAttention');
    sameDType(name, q, k, v, pastKey, pastValue);
    const hd = pastKey.dim(3);
    const present = { dtype: q.dtype, shape: [q.dim(0), opts.kvNumHeads, this.freshDim('total'), hd] };
    const [out, pk, pv] = this.emit(
      'GroupQueryAttention',
      [q, k, v, pastKey, pastValue, seqlensK, totalSequenceLength, opts.cos, opts.sin],
      [{ dtype: q.dtype, shape: q.shape }, present, present],
      {
        num_heads: { int: opts.numHeads },
        kv_num_heads: { int: opts.kvNumHeads },
        scale: floatAttr(opts.scale),
        do_rotary: flagAttr(opts.cos !== undefined),
        rotary_interleaved: flagAttr(opts.interleaved),
      },
      MS_DOMAIN,
      name,
    );
    return { out: out!, presentKey: pk, presentValue: pv };
  }

  /**
   * ONNX RotaryEmbedding (opset 23) on x [B, H, S, hd] or [B, S, H*hd] (then
   * numHeads is required). Without position ids, cos/sin are per token:
   * [B, S, rotaryDim/2]. `interleaved` rotates (even, odd) pairs (GPT-J);
   * otherwise halves (GPT-NeoX).
   */
  rotaryEmbedding(
    this: Graph,
    x: Value,
    cos: Value,
    sin: Value,
    opts: { interleaved: boolean; numHeads?: number; rotaryDim?: number; positionIds?: Value },
  ): Value {
    const name = this.nodeName('RotaryEmbedding');
    sameDType(name, x, cos, sin);
    if (x.rank === 3 && opts.numHeads === undefined) throw new GraphError('BAD_ARGUMENT', '3-D RotaryEmbedding input needs numHeads', name);
    return this.emit(
      'RotaryEmbedding',
      [x, cos, sin, opts.positionIds],
      [{ dtype: x.dtype, shape: x.shape }],
      { interleaved: flagAttr(opts.interleaved), num_heads: intAttr(opts.numHeads), rotary_embedding_dim: intAttr(opts.rotaryDim) },
      '',
      name,
    )[0]!;
  }
}

function mulDim(a: number, b: Dim): Dim {
  return typeof b === 'number' ? a * b : `${a}*${b}`;
}

function addDims(a: Dim, b: Dim): Dim {
  return typeof a === 'number' && typeof b === 'number' ? a + b : `${a}+${b}`;
}
