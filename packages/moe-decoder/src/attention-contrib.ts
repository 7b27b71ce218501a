import { type Graph, nn, type OpSet, type Value } from '@vlmkit/onnx-graph';
import { MoeDecoderError } from './errors.js';

/**
 * The attention kernel of a decoder built with `ops: 'contrib'`:
 * - 'mha': com.microsoft MultiHeadAttention over the cache the graph concatenates itself (past + new, as the
 *   opset-23 op does internally), the KV heads repeated for the query heads. Every dtype, every step shape;
 *   the only one ORT's CUDA EP takes in float32.
 * - 'gqa': com.microsoft GroupQueryAttention (the cache concatenated by the op, KV heads shared). ORT's CUDA
 *   EP registers it for float16 / bfloat16 only, and ORT's CPU EP refuses batch > 1 with a multi-token
 *   step over a nonempty past (generate never builds one: prefill has no past, decode steps are one token).
 * Default: 'mha' for float32 activations, 'gqa' for float16 / bfloat16.
 */
export const CONTRIB_ATTENTION_KERNELS = ['mha', 'gqa'] as const;
export type ContribAttentionKernel = (typeof CONTRIB_ATTENTION_KERNELS)[number];

/** What every layer's contrib attention shares, computed once per decoder (`contribAttentionInputs`). */
export interface ContribAttentionInputs {
  kernel: ContribAttentionKernel;
  /** The rotary tables as com.microsoft RotaryEmbedding reads them (`g.perTokenRotaryCache`). */
  rotary: { cos: Value; sin: Value; positionIds: Value };
  /** Additive bias [B, 1, S, T] from the bool mask: 0 attend, -1e9 not. */
  bias: Value;
  /** 'gqa' only: int32 seqlens_k [B] (T - 1 on every row: padding is in `bias`) and total_sequence_length T. */
  seqlensK?: Value;
  totalSequenceLength?: Value;
}

/**
 * Once per decoder: the per-token rotary tables [B, S, hd/2] as a cache with b*S+s position ids, the bool
 * mask [B, 1, S, T] (`causalPaddingMask`) as an additive bias, and for 'gqa' its length inputs. Every row
 * counts all T positions as valid: left padding is masked by the bias, not by seqlens_k (whose contract is
 * right padding).
 */
export function contribAttentionInputs(
  g: Graph,
  tables: { cos: Value; sin: Value; mask: Value },
  kernel: ContribAttentionKernel | undefined,
): ContribAttentionInputs {
  return g.scope('contrib_attention', () => {
    // The fused ops take the tables and the bias in the activations' dtype: the graph's compute dtype (the
    // float32 rope tables cast once here; the fused rotary then runs in it, not in float32 as HF ERNIE's).
    const [cos, sin] = [g.cast(tables.cos, g.computeDtype), g.cast(tables.sin, g.computeDtype)];
    const k: ContribAttentionKernel = kernel ?? (cos.dtype === 'float32' ? 'mha' : 'gqa');
    const rotary = g.perTokenRotaryCache(cos, sin);
    const bias = nn.maskToBias(g, tables.mask, cos.dtype);
    if (k === 'mha') return { kernel: k, rotary, bias };
    const total = g.cast(g.squeeze(g.shapeOf(tables.mask, 3, 4), [0]), 'int32');
    const seqlensK = g.expand(g.sub(total, g.scalar(1, 'int32')), g.shapeOf(tables.mask, 0, 1), [tables.mask.dim(0)]);
    return { kernel: k, rotary, bias, seqlensK, totalSequenceLength: total };
  });
}

export interface ContribAttentionArgs {
  /** [B, S, Hq*hd], [B, S, Hkv*hd] x2: the projections before rotary. */
  q: Value;
  k: Value;
  v: Value;
  past: { key: Value; value: Value } | undefined;
  numHeads: number;
  kvNumHeads: number;
  headDim: number;
  scale: number;
  interleaved: boolean;
}

/**
 * Rotary on q and k (com.microsoft RotaryEmbedding), then attention over past + current keys with the
 * chosen kernel. Returns the output [B, S, Hq*hd], the roped k (for the 'append' cache) and the
 * concatenated cache [B, Hkv, P+S, hd] (present) when a past was given.
 */
export function contribAttention(
  g: Graph,
  shared: ContribAttentionInputs,
  a: ContribAttentionArgs,
): { out: Value; k: Value; presentKey: Value | undefined; presentValue: Value | undefined } {
  const { numHeads: hq, kvNumHeads: hkv, headDim: hd } = a;
  const rotary = (x: Value, numHeads: number) =>
    g.scope('rotary_emb', () =>
      g.contribRotaryEmbedding(x, shared.rotary.positionIds, shared.rotary, { interleaved: a.interleaved, numHeads }),
    );
  const [q, k] = [rotary(a.q, hq), rotary(a.k, hkv)];
  return g.scope('attn', () => {
    if (shared.kernel === 'gqa') {
      if (a.past === undefined) throw new MoeDecoderError('BAD_INPUT', "attention kernel 'gqa' needs the KV cache inputs (past).");
      const r = g.groupQueryAttentionWithBias(
        q,
        k,
        a.v,
        a.past,
        { seqlensK: shared.seqlensK!, totalSequenceLength: shared.totalSequenceLength!, attentionBias: shared.bias },
        { numHeads: hq, kvNumHeads: hkv, scale: a.scale },
      );
      return { out: r.out, k, presentKey: r.presentKey, presentValue: r.presentValue };
    }
    const heads = (x: Value) => g.transpose(g.reshape(x, [0, 0, hkv, hd]), [0, 2, 1, 3]); // [B, Hkv, S, hd]
    const key = a.past ? g.concat([a.past.key, heads(k)], 2) : heads(k);
    const value = a.past ? g.concat([a.past.value, heads(a.v)], 2) : heads(a.v);
    const rep = hq / hkv;
    const r = g.multiHeadAttention(q, nn.repeatKvHeads(g, key, rep), nn.repeatKvHeads(g, value, rep), {
      numHeads: hq,
      scale: a.scale,
      attentionBias: shared.bias,
    });
    return { out: r.out, k, presentKey: a.past ? key : undefined, presentValue: a.past ? value : undefined };
  });
}

/** A decoder builder's choice of ops (see `OpSet`); `attentionKernel` only matters with 'contrib'. */
export interface DecoderOpsOptions {
  /** 'onnx' (default): opset-23 Attention, RMSNormalization, RotaryEmbedding; 'contrib': com.microsoft fused ops. */
  ops?: OpSet;
  /** With 'contrib': the attention kernel (`ContribAttentionKernel`); default by dtype. */
  attentionKernel?: ContribAttentionKernel;
}
