import { GraphError } from './errors.js';
import type { Graph } from './graph.js';
import { flagAttr, floatAttr, MS_DOMAIN } from './graph-core.js';
import type { Dim } from './shape.js';
import type { Value } from './value.js';

/**
 * Which ops a builder emits: 'onnx' the standard ai.onnx ops (opset-23 Attention, RMSNormalization,
 * RotaryEmbedding; the reference path), 'contrib' onnxruntime's com.microsoft fused ops where one fits.
 */
export const OP_SETS = ['onnx', 'contrib'] as const;
export type OpSet = (typeof OP_SETS)[number];

/** `value` as an `OpSet`, or a GraphError naming the choices (CLI and config input). */
export function opSet(value: string): OpSet {
  if ((OP_SETS as readonly string[]).includes(value)) return value as OpSet;
  throw new GraphError('BAD_ARGUMENT', `ops must be one of ${OP_SETS.join(', ')}, got '${value}'`);
}

function requireSameDType(op: string, ...vs: Value[]): void {
  const d = vs[0]!.dtype;
  const bad = vs.find((v) => v.dtype !== d);
  if (bad) throw new GraphError('DTYPE_MISMATCH', `${op}: operands differ in dtype: ${vs.join(', ')}`);
}

export interface GqaInputs {
  /** int32 [B]: each row's total length (past + current) minus one. */
  seqlensK: Value;
  /** int32 scalar: the total length (past + current). */
  totalSequenceLength: Value;
  /** Additive bias [B|1, 1, S, T] in q's dtype (padding, left or right). */
  attentionBias?: Value;
}

/**
 * onnxruntime's com.microsoft fused ops (docs/ContribOperators.md), methods of `Graph` (graph.ts mixes them
 * in): what a builder or a rewrite pass emits for ORT's fused kernels. Each one replaces a group of standard
 * ONNX ops with one kernel that ORT's CPU and CUDA EPs implement (the CUDA EP takes all of them in float32
 * except GroupQueryAttention, which it registers for float16 / bfloat16 only). The standard ops stay the
 * reference. MultiHeadAttention, GroupQueryAttention and MatMulNBits are in ops-attention.ts / ops-math.ts.
 */
export class ContribOps {
  /**
   * com.microsoft SkipSimplifiedLayerNormalization: `sum = x + skip`, `out = RMSNorm(sum) * gamma` over the
   * last axis, in one kernel (the residual add and the next RMSNorm of a pre-norm decoder). Returns both.
   */
  skipSimplifiedLayerNorm(this: Graph, x: Value, skip: Value, gamma: Value, epsilon: number): { out: Value; sum: Value } {
    requireSameDType('SkipSimplifiedLayerNormalization', x, skip, gamma);
    if (x.rank !== skip.rank) throw new GraphError('RANK_MISMATCH', `SkipSimplifiedLayerNormalization: ${x} and ${skip} differ in rank`);
    const spec = { dtype: x.dtype, shape: x.shape };
    // Outputs: output, mean (unused by the simplified op), inv_std_var, input_skip_bias_sum.
    const [out, , , sum] = this.custom(
      'SkipSimplifiedLayerNormalization',
      MS_DOMAIN,
      [x, skip, gamma],
      [spec, { dtype: 'float32', shape: [] }, { dtype: 'float32', shape: [] }, spec],
      { epsilon: { float: epsilon } },
    );
    return { out: out!, sum: sum! };
  }

  /** com.microsoft SkipLayerNormalization: `sum = x + skip`, `out = LayerNorm(sum) * gamma + beta` over the last axis. */
  skipLayerNorm(this: Graph, x: Value, skip: Value, gamma: Value, beta: Value | undefined, epsilon: number): { out: Value; sum: Value } {
    requireSameDType('SkipLayerNormalization', x, skip, gamma, ...(beta ? [beta] : []));
    if (x.rank !== skip.rank) throw new GraphError('RANK_MISMATCH', `SkipLayerNormalization: ${x} and ${skip} differ in rank`);
    const spec = { dtype: x.dtype, shape: x.shape };
    const [out, , , sum] = this.custom(
      'SkipLayerNormalization',
      MS_DOMAIN,
      [x, skip, gamma, beta],
      [spec, { dtype: 'float32', shape: [] }, { dtype: 'float32', shape: [] }, spec],
      { epsilon: { float: epsilon } },
    );
    return { out: out!, sum: sum! };
  }

  /**
   * com.microsoft RotaryEmbedding on x [B, S, H*hd]: rows `positionIds` [B, S] int64 of the caches
   * [maxPos, rotaryDim/2] give each token's cos/sin. `interleaved` rotates (even, odd) pairs (GPT-J),
   * otherwise halves (GPT-NeoX), as the ONNX op.
   */
  contribRotaryEmbedding(
    this: Graph,
    x: Value,
    positionIds: Value,
    cache: { cos: Value; sin: Value },
    opts: { interleaved: boolean; numHeads: number },
  ): Value {
    requireSameDType('RotaryEmbedding', x, cache.cos, cache.sin);
    if (x.rank !== 3) throw new GraphError('RANK_MISMATCH', `com.microsoft RotaryEmbedding here takes [B, S, H*hd], got ${x}`);
    if (positionIds.dtype !== 'int64')
      throw new GraphError('DTYPE_MISMATCH', `RotaryEmbedding position ids must be int64, got ${positionIds}`);
    return this.custom('RotaryEmbedding', MS_DOMAIN, [x, positionIds, cache.cos, cache.sin], [{ dtype: x.dtype, shape: x.shape }], {
      interleaved: flagAttr(opts.interleaved),
      num_heads: { int: opts.numHeads },
    })[0]!;
  }

  /**
   * Per-token rotary tables cos/sin [B, S, r] (ERNIE's 3D M-RoPE tables, Granite's from its position ids) as
   * what com.microsoft RotaryEmbedding indexes: the caches [B*S, r] (the tables' rows, flattened) and
   * position ids [B, S] = b*S + s (each token reads its own row). The op's own M-RoPE variant
   * (MRotaryEmbedding) lays the t/h/w sections out contiguously (Qwen2-VL) or every third frequency
   * (Qwen3-VL), not ERNIE's h/w alternation, so ERNIE keeps its tables and this indexing.
   */
  perTokenRotaryCache(this: Graph, cos: Value, sin: Value): { cos: Value; sin: Value; positionIds: Value } {
    if (cos.rank !== 3) throw new GraphError('RANK_MISMATCH', `per-token rotary tables must be [B, S, r], got ${cos}`);
    const r = cos.dim(2);
    if (typeof r !== 'number') throw new GraphError('BAD_ARGUMENT', `rotary table width must be static, got ${cos}`);
    const rows: Dim = mulDims(cos.dim(0), cos.dim(1));
    const flat = (t: Value) => this.reshape(t, [-1, r], [rows, r]);
    const zero = this.scalar(0, 'int64');
    const one = this.scalar(1, 'int64');
    const n = this.squeeze(this.mul(this.shapeOf(cos, 0, 1), this.shapeOf(cos, 1, 2)), [0]);
    const positionIds = this.reshape(this.range(zero, n, one, rows), this.shapeOf(cos, 0, 2), [cos.dim(0), cos.dim(1)]);
    return { cos: flat(cos), sin: flat(sin), positionIds };
  }

  /**
   * com.microsoft GroupQueryAttention with an additive attention bias (ORT >= 1.22): q [B, S, Hq*hd],
   * k/v [B, S, Hkv*hd], past [B, Hkv, P, hd]; present [B, Hkv, T, hd] with T = `totalSequenceLength`.
   * Causal inside the op. ORT's CPU kernel refuses batch > 1 with S > 1 and a nonempty past
   * ("batch_size must be 1 when sequence_length > 1 and past context is given"); CUDA registers it
   * for float16 / bfloat16 only.
   */
  groupQueryAttentionWithBias(
    this: Graph,
    q: Value,
    k: Value,
    v: Value,
    past: { key: Value; value: Value },
    inputs: GqaInputs,
    opts: { numHeads: number; kvNumHeads: number; scale?: number },
  ): { out: Value; presentKey: Value; presentValue: Value } {
    requireSameDType('GroupQueryAttention', q, k, v, past.key, past.value);
    if (inputs.seqlensK.dtype !== 'int32' || inputs.totalSequenceLength.dtype !== 'int32') {
      throw new GraphError('DTYPE_MISMATCH', 'GroupQueryAttention: seqlens_k and total_sequence_length must be int32');
    }
    const present = { dtype: q.dtype, shape: [q.dim(0), opts.kvNumHeads, 'gqa_total', past.key.dim(3)] };
    const [out, presentKey, presentValue] = this.custom(
      'GroupQueryAttention',
      MS_DOMAIN,
      // query, key, value, past_key, past_value, seqlens_k, total_sequence_length, cos, sin, position_ids, attention_bias
      [q, k, v, past.key, past.value, inputs.seqlensK, inputs.totalSequenceLength, undefined, undefined, undefined, inputs.attentionBias],
      [{ dtype: q.dtype, shape: q.shape }, present, present],
      { num_heads: { int: opts.numHeads }, kv_num_heads: { int: opts.kvNumHeads }, scale: floatAttr(opts.scale) },
    );
    return { out: out!, presentKey: presentKey!, presentValue: presentValue! };
  }

  /**
   * com.microsoft MoE with SiLU-gated experts (HF/vLLM's `down(silu(gate(x)) * up(x))`): x [N, D], `routerLogits`
   * [N, E]; the op takes softmax(routerLogits), keeps each token's top `k`, renormalizes their weights to sum to 1
   * and sums the k experts' outputs so weighted. `fc1` [E, 2I, D] holds each expert's gate and up rows
   * interleaved (gate row i, then up row i: `swiglu_fusion` 1, the only layout ORT's CPU kernel takes; see
   * `interleavedGateUp`), `fc2` [E, D, I] the down projections. SwiGLU with alpha 1, beta 0 and no clamp is
   * exactly silu(gate) * up.
   */
  moe(this: Graph, x: Value, routerLogits: Value, fc1: Value, fc2: Value, opts: { k: number }): Value {
    requireSameDType('MoE', x, routerLogits, fc1, fc2);
    if (x.rank !== 2 || routerLogits.rank !== 2 || fc1.rank !== 3 || fc2.rank !== 3) {
      throw new GraphError(
        'RANK_MISMATCH',
        `MoE takes x [N, D], router [N, E], fc1 [E, 2I, D], fc2 [E, D, I]; got ${x}, ${routerLogits}, ${fc1}, ${fc2}`,
      );
    }
    return this.custom('MoE', MS_DOMAIN, [x, routerLogits, fc1, undefined, fc2], [{ dtype: x.dtype, shape: x.shape }], {
      k: { int: opts.k },
      activation_type: { string: 'swiglu' },
      swiglu_fusion: { int: 1 },
      activation_alpha: { float: 1 },
      activation_beta: { float: 0 },
      normalize_routing_weights: { int: 1 },
    })[0]!;
  }
}

function mulDims(a: Dim, b: Dim): Dim {
  return typeof a === 'number' && typeof b === 'number' ? a * b : `${a}*${b}`;
}
