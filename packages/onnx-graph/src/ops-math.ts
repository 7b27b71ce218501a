import type { DType } from './dtype.js';
import { GraphError } from './errors.js';
import type { Graph } from './graph.js';
import { flagAttr, floatAttr, MS_DOMAIN } from './graph-core.js';
import { checkAxis, requireFloat, sameDType } from './op-checks.js';
import { broadcastShapes, type Dim, dimsCompatible, type Shape } from './shape.js';
import type { Value } from './value.js';

/** A value, or a plain number turned into a scalar constant of the other operand's dtype. */
export type Operand = Value | number;

/** Elementwise ops on two operands that broadcast, by method name: ONNX op. */
const ARITHMETIC = { add: 'Add', sub: 'Sub', mul: 'Mul', div: 'Div', pow: 'Pow', max: 'Max', min: 'Min', mod: 'Mod' } as const;
/** As ARITHMETIC, giving bool. */
const COMPARISONS = {
  equal: 'Equal',
  less: 'Less',
  lessOrEqual: 'LessOrEqual',
  greater: 'Greater',
  greaterOrEqual: 'GreaterOrEqual',
} as const;
/** On two bool values. */
const LOGICAL = { and: 'And', or: 'Or' } as const;
/** Elementwise on one value, of its dtype and shape. */
const UNARY = {
  neg: 'Neg',
  exp: 'Exp',
  log: 'Log',
  sqrt: 'Sqrt',
  reciprocal: 'Reciprocal',
  abs: 'Abs',
  erf: 'Erf',
  tanh: 'Tanh',
  sigmoid: 'Sigmoid',
  relu: 'Relu',
  cos: 'Cos',
  sin: 'Sin',
  floor: 'Floor',
} as const;
/** Over `axes` (kept as size 1 unless `keepdims` is false). */
const REDUCTIONS = { reduceSum: 'ReduceSum', reduceMean: 'ReduceMean', reduceMax: 'ReduceMax', reduceMin: 'ReduceMin' } as const;

type Methods<Table, Method> = { [K in keyof Table]: Method };

/** The table ops' signatures: methods of `Graph` as the class's own are. */
export interface MathOps
  extends Methods<typeof ARITHMETIC & typeof COMPARISONS, (this: Graph, a: Operand, b: Operand) => Value>,
    Methods<typeof LOGICAL, (this: Graph, a: Value, b: Value) => Value>,
    Methods<typeof UNARY, (this: Graph, x: Value) => Value>,
    Methods<typeof REDUCTIONS, (this: Graph, x: Value, axes: readonly number[], keepdims?: boolean) => Value> {}

/**
 * Arithmetic, activations, normalisations and reductions: methods of `Graph` (graph.ts mixes them in; this
 * class is never instantiated). Every op checks its operands' dtypes and shapes and throws a GraphError
 * naming the node.
 */
export class MathOps {
  // The elementwise ops and reductions that differ only in their ONNX op are the tables above, installed below.

  not(this: Graph, x: Value): Value {
    if (x.dtype !== 'bool') throw new GraphError('DTYPE_MISMATCH', `Not takes bool, got ${x.dtype}`, this.scoped('Not'));
    return unary(this, 'Not', x);
  }

  /**
   * x * sigmoid(x), in float32 in a 16-bit graph (`inFloat32`) and rounded once, as torch's (and a fused GPU
   * kernel's) SiLU on bfloat16 / float16 does.
   */
  silu(this: Graph, x: Value): Value {
    return this.inFloat32(() => this.mul(x, this.sigmoid(x)));
  }

  /** ONNX Gelu (opset 20): exact erf form, or the tanh approximation (gelu_pytorch_tanh). */
  gelu(this: Graph, x: Value, approximate: 'none' | 'tanh' = 'none'): Value {
    requireFloat('Gelu', x);
    return this.emit('Gelu', [x], [{ dtype: x.dtype, shape: x.shape }], { approximate: { string: approximate } })[0]!;
  }

  /** x * sigmoid(1.702 x), CLIP's quick_gelu. */
  quickGelu(this: Graph, x: Value): Value {
    return this.mul(x, this.sigmoid(this.mul(x, 1.702)));
  }

  // ---- linear algebra -----------------------------------------------------

  /** numpy matmul: batch dims broadcast, inner dims must agree. */
  matmul(this: Graph, a: Value, b: Value): Value {
    const name = this.nodeName('MatMul');
    sameDType(name, a, b);
    if (a.rank < 1 || b.rank < 1) throw new GraphError('RANK_MISMATCH', `MatMul needs rank >= 1, got ${a} and ${b}`, name);
    const aS = a.rank === 1 ? [1, a.shape[0]!] : a.shape;
    const bS = b.rank === 1 ? [b.shape[0]!, 1] : b.shape;
    const k1 = aS[aS.length - 1]!;
    const k2 = bS[bS.length - 2]!;
    if (!dimsCompatible(k1, k2)) {
      throw new GraphError('SHAPE_MISMATCH', `MatMul inner dims differ: ${a} x ${b} (${k1} vs ${k2})`, name);
    }
    const batch = broadcastShapes(aS.slice(0, -2), bS.slice(0, -2));
    if (batch === undefined) throw new GraphError('SHAPE_MISMATCH', `MatMul batch dims do not broadcast: ${a} x ${b}`, name);
    const out: Dim[] = [...batch];
    if (a.rank > 1) out.push(aS[aS.length - 2]!);
    if (b.rank > 1) out.push(bS[bS.length - 1]!);
    return this.emit('MatMul', [a, b], [{ dtype: a.dtype, shape: out }], {}, '', name)[0]!;
  }

  /**
   * com.microsoft MatMulNBits: a [..., K] x dequant(B)^T with B a block-quantized [N, K] weight (see
   * quant.ts for the layouts), giving [..., N]. `b` uint8 [N, kBlocks, blobSize], `scales` [N * kBlocks]
   * of a's dtype, `zeroPoints` uint8 packed (absent: 2^(bits-1)).
   */
  matmulNBits(
    this: Graph,
    a: Value,
    q: { b: Value; scales: Value; zeroPoints?: Value | undefined },
    attrs: { k: number; n: number; bits: number; blockSize: number; accuracyLevel: number },
  ): Value {
    const name = this.nodeName('MatMulNBits');
    sameDType(name, a, q.scales);
    const kA = a.shape[a.rank - 1];
    if (a.rank < 2 || !dimsCompatible(kA!, attrs.k)) {
      throw new GraphError('SHAPE_MISMATCH', `MatMulNBits needs A [..., ${attrs.k}], got ${a}`, name);
    }
    const kBlocks = Math.ceil(attrs.k / attrs.blockSize);
    const blob = (attrs.blockSize * attrs.bits) / 8;
    const bShape = q.b.shape;
    if (q.b.dtype !== 'uint8' || bShape.length !== 3 || bShape[0] !== attrs.n || bShape[1] !== kBlocks || bShape[2] !== blob) {
      throw new GraphError('SHAPE_MISMATCH', `MatMulNBits B must be uint8 [${attrs.n}, ${kBlocks}, ${blob}], got ${q.b}`, name);
    }
    return this.emit(
      'MatMulNBits',
      [a, q.b, q.scales, q.zeroPoints],
      [{ dtype: a.dtype, shape: [...a.shape.slice(0, -1), attrs.n] }],
      {
        K: { int: attrs.k },
        N: { int: attrs.n },
        bits: { int: attrs.bits },
        block_size: { int: attrs.blockSize },
        accuracy_level: { int: attrs.accuracyLevel },
      },
      MS_DOMAIN,
      name,
    )[0]!;
  }

  /** Gemm on 2-D operands: alpha * A' B' + beta * C. */
  gemm(
    this: Graph,
    a: Value,
    b: Value,
    c?: Value,
    opts: { transA?: boolean; transB?: boolean; alpha?: number; beta?: number } = {},
  ): Value {
    const name = this.nodeName('Gemm');
    sameDType(name, a, b, ...(c ? [c] : []));
    if (a.rank !== 2 || b.rank !== 2) throw new GraphError('RANK_MISMATCH', `Gemm needs 2-D operands, got ${a} and ${b}`, name);
    const [m, ka] = opts.transA ? [a.shape[1]!, a.shape[0]!] : [a.shape[0]!, a.shape[1]!];
    const [kb, n] = opts.transB ? [b.shape[1]!, b.shape[0]!] : [b.shape[0]!, b.shape[1]!];
    if (!dimsCompatible(ka, kb)) throw new GraphError('SHAPE_MISMATCH', `Gemm inner dims differ: ${ka} vs ${kb}`, name);
    return this.emit(
      'Gemm',
      [a, b, c],
      [{ dtype: a.dtype, shape: [m, n] }],
      { transA: flagAttr(opts.transA), transB: flagAttr(opts.transB), alpha: floatAttr(opts.alpha), beta: floatAttr(opts.beta) },
      '',
      name,
    )[0]!;
  }

  // ---- normalisation and softmax -----------------------------------------

  softmax(this: Graph, x: Value, axis = -1): Value {
    const name = this.nodeName('Softmax');
    requireFloat(name, x);
    checkAxis(name, axis, x.rank);
    return this.emit('Softmax', [x], [{ dtype: x.dtype, shape: x.shape }], { axis: { int: axis } }, '', name)[0]!;
  }

  /** LayerNormalization over the last axis (opset 17). */
  layerNorm(this: Graph, x: Value, scale: Value, bias: Value | undefined, epsilon: number): Value {
    return lastAxisNorm(this, 'LayerNormalization', x, scale, bias, epsilon);
  }

  /** RMSNormalization over the last axis (opset 23). */
  rmsNorm(this: Graph, x: Value, scale: Value, epsilon: number): Value {
    return lastAxisNorm(this, 'RMSNormalization', x, scale, undefined, epsilon);
  }

  // ---- scans ------------------------------------------------------------

  cumsum(this: Graph, x: Value, axis: number, opts: { exclusive?: boolean; reverse?: boolean } = {}): Value {
    const name = this.nodeName('CumSum');
    checkAxis(name, axis, x.rank);
    return this.emit(
      'CumSum',
      [x, this.constant('int64', [], [axis])],
      [{ dtype: x.dtype, shape: x.shape }],
      { exclusive: flagAttr(opts.exclusive), reverse: flagAttr(opts.reverse) },
      '',
      name,
    )[0]!;
  }

  /**
   * TopK along `axis`: [values, int64 indices]; ties in order of index (ONNX). `k` a number, or an int64 [1]
   * value known at run time.
   */
  topk(this: Graph, x: Value, k: number | Value, axis = -1, opts: { largest?: boolean; sorted?: boolean } = {}): [Value, Value] {
    const name = this.nodeName('TopK');
    const ax = checkAxis(name, axis, x.rank);
    const d = x.shape[ax]!;
    if (typeof k === 'number' && typeof d === 'number' && k > d)
      throw new GraphError('BAD_ARGUMENT', `TopK k=${k} exceeds axis size ${d} of ${x}`, name);
    if (typeof k !== 'number' && (k.dtype !== 'int64' || k.rank !== 1))
      throw new GraphError('DTYPE_MISMATCH', `TopK k must be int64 [1], got ${k}`, name);
    const kDim = typeof k === 'number' ? k : this.freshDim('k');
    const shape = x.shape.map((s, i) => (i === ax ? kDim : s));
    const [v, i] = this.emit(
      'TopK',
      [x, typeof k === 'number' ? this.ints([k]) : k],
      [
        { dtype: x.dtype, shape },
        { dtype: 'int64', shape },
      ],
      {
        axis: { int: axis },
        largest: opts.largest === false ? { int: 0 } : undefined,
        sorted: opts.sorted === false ? { int: 0 } : undefined,
      },
      '',
      name,
    );
    return [v!, i!];
  }

  /** ArgMax along `axis` (int64); the first index among equal maxima (ONNX `select_last_index` 0, as torch.argmax). */
  argmax(this: Graph, x: Value, axis = -1, keepdims = false): Value {
    const name = this.nodeName('ArgMax');
    const ax = checkAxis(name, axis, x.rank);
    const shape = keepdims ? x.shape.map((d, i) => (i === ax ? 1 : d)) : x.shape.filter((_, i) => i !== ax);
    return this.emit('ArgMax', [x], [{ dtype: 'int64', shape }], { axis: { int: ax }, keepdims: { int: keepdims ? 1 : 0 } }, '', name)[0]!;
  }

  /**
   * Cast to `to` (x itself when it already is). An initializer cast twice to one dtype gets one Cast (a tied
   * embedding table read by Gather and by the LM head): folded at save, it is stored once.
   */
  cast(this: Graph, x: Value, to: DType): Value {
    if (x.dtype === to) return x;
    const casts = initializerCasts(this);
    const seen = casts.get(x)?.get(to);
    if (seen !== undefined) return seen;
    const T: Record<DType, number> = {
      float32: 1,
      uint8: 2,
      int8: 3,
      int16: 5,
      int32: 6,
      int64: 7,
      bool: 9,
      float16: 10,
      float64: 11,
      bfloat16: 16,
    };
    const out = this.emit('Cast', [x], [{ dtype: to, shape: x.shape }], { to: { int: T[to] } })[0]!;
    if (this.isInitializer(x)) {
      const byDtype = casts.get(x) ?? new Map<DType, Value>();
      casts.set(x, byDtype.set(to, out));
    }
    return out;
  }

  where(this: Graph, cond: Value, a: Operand, b: Operand): Value {
    const name = this.nodeName('Where');
    if (cond.dtype !== 'bool') throw new GraphError('DTYPE_MISMATCH', `Where condition must be bool, got ${cond}`, name);
    const [va, vb] = operands(this, name, a, b);
    sameDType(name, va, vb);
    const s1 = broadcastShapes(cond.shape, va.shape);
    const shape = s1 && broadcastShapes(s1, vb.shape);
    if (shape === undefined) throw new GraphError('SHAPE_MISMATCH', `Where operands do not broadcast: ${cond}, ${va}, ${vb}`, name);
    return this.emit('Where', [cond, va, vb], [{ dtype: va.dtype, shape }], {}, '', name)[0]!;
  }
}

install(
  ARITHMETIC,
  (op) =>
    function (this: Graph, a: Operand, b: Operand) {
      return binary(this, op, a, b);
    },
);
install(
  { ...COMPARISONS, ...LOGICAL },
  (op) =>
    function (this: Graph, a: Operand, b: Operand) {
      return binary(this, op, a, b, 'bool');
    },
);
install(
  UNARY,
  (op) =>
    function (this: Graph, x: Value) {
      return unary(this, op, x);
    },
);
install(
  REDUCTIONS,
  (op) =>
    function (this: Graph, x: Value, axes: readonly number[], keepdims = true) {
      return reduce(this, op, x, axes, keepdims);
    },
);

/** Adds one method per table entry to MathOps, as a class method is (named, not enumerable). */
function install(table: Record<string, string>, method: (op: string) => (this: Graph, ...args: never[]) => Value): void {
  for (const [name, op] of Object.entries(table)) {
    const value = Object.defineProperty(method(op), 'name', { value: name });
    Object.defineProperty(MathOps.prototype, name, { value, writable: true, configurable: true });
  }
}

/** Casts of initializers made so far in each graph (a body has its own), by value and target dtype (see `cast`). */
const castsByGraph = new WeakMap<Graph, Map<Value, Map<DType, Value>>>();

function initializerCasts(g: Graph): Map<Value, Map<DType, Value>> {
  const casts = castsByGraph.get(g) ?? new Map<Value, Map<DType, Value>>();
  castsByGraph.set(g, casts);
  return casts;
}

function binary(g: Graph, op: string, a: Operand, b: Operand, outDType?: DType): Value {
  const name = g.nodeName(op);
  const [va, vb] = operands(g, name, a, b);
  sameDType(name, va, vb);
  const shape = broadcastShapes(va.shape, vb.shape);
  if (shape === undefined) {
    throw new GraphError('SHAPE_MISMATCH', `${op} operands do not broadcast: ${va} and ${vb}`, name);
  }
  return g.emit(op, [va, vb], [{ dtype: outDType ?? va.dtype, shape }], {}, '', name)[0]!;
}

function unary(g: Graph, op: string, x: Value): Value {
  return g.emit(op, [x], [{ dtype: x.dtype, shape: x.shape }])[0]!;
}

function operands(g: Graph, name: string, a: Operand, b: Operand): [Value, Value] {
  if (typeof a === 'number' && typeof b === 'number') {
    throw new GraphError('BAD_ARGUMENT', 'at least one operand must be a graph value', name);
  }
  const va = typeof a === 'number' ? g.scalar(a, (b as Value).dtype) : a;
  const vb = typeof b === 'number' ? g.scalar(b, va.dtype) : b;
  return [va, vb];
}

/** A normalisation over the last axis: `scale` (and `bias`) [last dim] of x's float dtype; x's dtype and shape out. */
function lastAxisNorm(g: Graph, op: string, x: Value, scale: Value, bias: Value | undefined, epsilon: number): Value {
  const name = g.nodeName(op);
  requireFloat(name, x);
  sameDType(name, x, scale, ...(bias ? [bias] : []));
  const last = x.shape[x.rank - 1]!;
  for (const p of bias ? [scale, bias] : [scale]) {
    if (p.rank !== 1 || !dimsCompatible(p.shape[0]!, last)) {
      throw new GraphError('SHAPE_MISMATCH', `norm parameter ${p} does not match the last dim of ${x}`, name);
    }
  }
  const attrs = { axis: { int: -1 }, epsilon: { float: epsilon } };
  return g.emit(op, [x, scale, bias], [{ dtype: x.dtype, shape: x.shape }], attrs, '', name)[0]!;
}

function reduce(g: Graph, op: string, x: Value, axes: readonly number[], keepdims: boolean): Value {
  const name = g.nodeName(op);
  const norm = axes.map((a) => checkAxis(name, a, x.rank));
  const shape: Shape = keepdims ? x.shape.map((d, i) => (norm.includes(i) ? 1 : d)) : x.shape.filter((_, i) => !norm.includes(i));
  return g.emit(
    op,
    [x, g.ints(axes)],
    [{ dtype: x.dtype, shape }],
    {
      keepdims: { int: keepdims ? 1 : 0 },
    },
    '',
    name,
  )[0]!;
}
