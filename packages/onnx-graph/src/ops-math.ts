import { type DType, isFloat } from './dtype.js';
import { GraphError } from './errors.js';
import { GraphCore, MS_DOMAIN } from './graph-core.js';
import { broadcastShapes, type Dim, dimsCompatible, formatShape, normAxis, type Shape } from './shape.js';
import type { Value } from './value.js';

/** A value, or a plain number turned into a scalar constant of the other operand's dtype. */
export type Operand = Value | number;

/**
 * Arithmetic, activations, normalisations and reductions. Every op checks
 * its operands' dtypes and shapes and throws a GraphError naming the node.
 */
export class MathOps extends GraphCore {
  /** Casts of initializers made so far, by value and target dtype (see `cast`). */
  private readonly initializerCasts = new Map<Value, Map<DType, Value>>();

  // ---- elementwise binary -------------------------------------------------

  add(a: Operand, b: Operand): Value {
    return this.binary('Add', a, b);
  }
  sub(a: Operand, b: Operand): Value {
    return this.binary('Sub', a, b);
  }
  mul(a: Operand, b: Operand): Value {
    return this.binary('Mul', a, b);
  }
  div(a: Operand, b: Operand): Value {
    return this.binary('Div', a, b);
  }
  pow(a: Operand, b: Operand): Value {
    return this.binary('Pow', a, b);
  }
  max(a: Operand, b: Operand): Value {
    return this.binary('Max', a, b);
  }
  min(a: Operand, b: Operand): Value {
    return this.binary('Min', a, b);
  }
  mod(a: Operand, b: Operand): Value {
    return this.binary('Mod', a, b);
  }
  equal(a: Operand, b: Operand): Value {
    return this.binary('Equal', a, b, 'bool');
  }
  less(a: Operand, b: Operand): Value {
    return this.binary('Less', a, b, 'bool');
  }
  lessOrEqual(a: Operand, b: Operand): Value {
    return this.binary('LessOrEqual', a, b, 'bool');
  }
  greater(a: Operand, b: Operand): Value {
    return this.binary('Greater', a, b, 'bool');
  }
  greaterOrEqual(a: Operand, b: Operand): Value {
    return this.binary('GreaterOrEqual', a, b, 'bool');
  }
  and(a: Value, b: Value): Value {
    return this.binary('And', a, b, 'bool');
  }
  or(a: Value, b: Value): Value {
    return this.binary('Or', a, b, 'bool');
  }

  // ---- elementwise unary --------------------------------------------------

  neg(x: Value): Value {
    return this.unary('Neg', x);
  }
  exp(x: Value): Value {
    return this.unary('Exp', x);
  }
  log(x: Value): Value {
    return this.unary('Log', x);
  }
  sqrt(x: Value): Value {
    return this.unary('Sqrt', x);
  }
  reciprocal(x: Value): Value {
    return this.unary('Reciprocal', x);
  }
  abs(x: Value): Value {
    return this.unary('Abs', x);
  }
  erf(x: Value): Value {
    return this.unary('Erf', x);
  }
  tanh(x: Value): Value {
    return this.unary('Tanh', x);
  }
  sigmoid(x: Value): Value {
    return this.unary('Sigmoid', x);
  }
  relu(x: Value): Value {
    return this.unary('Relu', x);
  }
  cos(x: Value): Value {
    return this.unary('Cos', x);
  }
  sin(x: Value): Value {
    return this.unary('Sin', x);
  }
  floor(x: Value): Value {
    return this.unary('Floor', x);
  }
  not(x: Value): Value {
    if (x.dtype !== 'bool') throw new GraphError('DTYPE_MISMATCH', `Not takes bool, got ${x.dtype}`, this.scoped('Not'));
    return this.unary('Not', x);
  }

  /**
   * x * sigmoid(x). A 16-bit x is computed in float32 and rounded once, as torch's (and a fused GPU kernel's)
   * SiLU on bfloat16 / float16 does.
   */
  silu(x: Value): Value {
    if (x.dtype === 'float16' || x.dtype === 'bfloat16') return this.cast(this.silu(this.cast(x, 'float32')), x.dtype);
    return this.mul(x, this.sigmoid(x));
  }

  /** ONNX Gelu (opset 20): exact erf form, or the tanh approximation (gelu_pytorch_tanh). */
  gelu(x: Value, approximate: 'none' | 'tanh' = 'none'): Value {
    this.requireFloat('Gelu', x);
    return this.emit('Gelu', [x], [{ dtype: x.dtype, shape: x.shape }], { approximate: { string: approximate } })[0]!;
  }

  /** x * sigmoid(1.702 x), CLIP's quick_gelu. */
  quickGelu(x: Value): Value {
    return this.mul(x, this.sigmoid(this.mul(x, 1.702)));
  }

  // ---- linear algebra -----------------------------------------------------

  /** numpy matmul: batch dims broadcast, inner dims must agree. */
  matmul(a: Value, b: Value): Value {
    const name = this.nodeName('MatMul');
    this.sameDType(name, a, b);
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
    a: Value,
    q: { b: Value; scales: Value; zeroPoints?: Value | undefined },
    attrs: { k: number; n: number; bits: number; blockSize: number; accuracyLevel: number },
  ): Value {
    const name = this.nodeName('MatMulNBits');
    this.sameDType(name, a, q.scales);
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
  gemm(a: Value, b: Value, c?: Value, opts: { transA?: boolean; transB?: boolean; alpha?: number; beta?: number } = {}): Value {
    const name = this.nodeName('Gemm');
    this.sameDType(name, a, b, ...(c ? [c] : []));
    if (a.rank !== 2 || b.rank !== 2) throw new GraphError('RANK_MISMATCH', `Gemm needs 2-D operands, got ${a} and ${b}`, name);
    const [m, ka] = opts.transA ? [a.shape[1]!, a.shape[0]!] : [a.shape[0]!, a.shape[1]!];
    const [kb, n] = opts.transB ? [b.shape[1]!, b.shape[0]!] : [b.shape[0]!, b.shape[1]!];
    if (!dimsCompatible(ka, kb)) throw new GraphError('SHAPE_MISMATCH', `Gemm inner dims differ: ${ka} vs ${kb}`, name);
    return this.emit(
      'Gemm',
      [a, b, c],
      [{ dtype: a.dtype, shape: [m, n] }],
      {
        transA: opts.transA ? { int: 1 } : undefined,
        transB: opts.transB ? { int: 1 } : undefined,
        alpha: opts.alpha !== undefined ? { float: opts.alpha } : undefined,
        beta: opts.beta !== undefined ? { float: opts.beta } : undefined,
      },
      '',
      name,
    )[0]!;
  }

  // ---- normalisation and softmax -----------------------------------------

  softmax(x: Value, axis = -1): Value {
    const name = this.nodeName('Softmax');
    this.requireFloat(name, x);
    this.axis(name, axis, x.rank);
    return this.emit('Softmax', [x], [{ dtype: x.dtype, shape: x.shape }], { axis: { int: axis } }, '', name)[0]!;
  }

  /** LayerNormalization over the last axis (opset 17). */
  layerNorm(x: Value, scale: Value, bias: Value | undefined, epsilon: number): Value {
    const name = this.nodeName('LayerNormalization');
    this.normChecks(name, x, scale, bias);
    return this.emit(
      'LayerNormalization',
      [x, scale, bias],
      [{ dtype: x.dtype, shape: x.shape }],
      {
        axis: { int: -1 },
        epsilon: { float: epsilon },
      },
      '',
      name,
    )[0]!;
  }

  /** RMSNormalization over the last axis (opset 23). */
  rmsNorm(x: Value, scale: Value, epsilon: number): Value {
    const name = this.nodeName('RMSNormalization');
    this.normChecks(name, x, scale, undefined);
    return this.emit(
      'RMSNormalization',
      [x, scale],
      [{ dtype: x.dtype, shape: x.shape }],
      {
        axis: { int: -1 },
        epsilon: { float: epsilon },
      },
      '',
      name,
    )[0]!;
  }

  // ---- reductions and scans ----------------------------------------------

  reduceSum(x: Value, axes: readonly number[], keepdims = true): Value {
    return this.reduce('ReduceSum', x, axes, keepdims);
  }
  reduceMean(x: Value, axes: readonly number[], keepdims = true): Value {
    return this.reduce('ReduceMean', x, axes, keepdims);
  }
  reduceMax(x: Value, axes: readonly number[], keepdims = true): Value {
    return this.reduce('ReduceMax', x, axes, keepdims);
  }
  reduceMin(x: Value, axes: readonly number[], keepdims = true): Value {
    return this.reduce('ReduceMin', x, axes, keepdims);
  }

  cumsum(x: Value, axis: number, opts: { exclusive?: boolean; reverse?: boolean } = {}): Value {
    const name = this.nodeName('CumSum');
    this.axis(name, axis, x.rank);
    return this.emit(
      'CumSum',
      [x, this.constant('int64', [], [axis])],
      [{ dtype: x.dtype, shape: x.shape }],
      {
        exclusive: opts.exclusive ? { int: 1 } : undefined,
        reverse: opts.reverse ? { int: 1 } : undefined,
      },
      '',
      name,
    )[0]!;
  }

  /**
   * TopK along `axis`: [values, int64 indices]; ties in order of index (ONNX). `k` a number, or an int64 [1]
   * value known at run time.
   */
  topk(x: Value, k: number | Value, axis = -1, opts: { largest?: boolean; sorted?: boolean } = {}): [Value, Value] {
    const name = this.nodeName('TopK');
    const ax = this.axis(name, axis, x.rank);
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
  argmax(x: Value, axis = -1, keepdims = false): Value {
    const name = this.nodeName('ArgMax');
    const ax = this.axis(name, axis, x.rank);
    const shape = keepdims ? x.shape.map((d, i) => (i === ax ? 1 : d)) : x.shape.filter((_, i) => i !== ax);
    return this.emit('ArgMax', [x], [{ dtype: 'int64', shape }], { axis: { int: ax }, keepdims: { int: keepdims ? 1 : 0 } }, '', name)[0]!;
  }

  /**
   * Cast to `to` (x itself when it already is). An initializer cast twice to one dtype gets one Cast (a tied
   * embedding table read by Gather and by the LM head): folded at save, it is stored once.
   */
  cast(x: Value, to: DType): Value {
    if (x.dtype === to) return x;
    const seen = this.initializerCasts.get(x)?.get(to);
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
    if (this.initializerList.some((e) => e.name === x.name)) {
      const byDtype = this.initializerCasts.get(x) ?? new Map<DType, Value>();
      this.initializerCasts.set(x, byDtype.set(to, out));
    }
    return out;
  }

  where(cond: Value, a: Operand, b: Operand): Value {
    const name = this.nodeName('Where');
    if (cond.dtype !== 'bool') throw new GraphError('DTYPE_MISMATCH', `Where condition must be bool, got ${cond}`, name);
    const [va, vb] = this.operands(name, a, b);
    this.sameDType(name, va, vb);
    const s1 = broadcastShapes(cond.shape, va.shape);
    const shape = s1 && broadcastShapes(s1, vb.shape);
    if (shape === undefined) throw new GraphError('SHAPE_MISMATCH', `Where operands do not broadcast: ${cond}, ${va}, ${vb}`, name);
    return this.emit('Where', [cond, va, vb], [{ dtype: va.dtype, shape }], {}, '', name)[0]!;
  }

  // ---- helpers ------------------------------------------------------------

  protected binary(op: string, a: Operand, b: Operand, outDType?: DType): Value {
    const name = this.nodeName(op);
    const [va, vb] = this.operands(name, a, b);
    this.sameDType(name, va, vb);
    const shape = broadcastShapes(va.shape, vb.shape);
    if (shape === undefined) {
      throw new GraphError('SHAPE_MISMATCH', `${op} operands do not broadcast: ${va} and ${vb}`, name);
    }
    return this.emit(op, [va, vb], [{ dtype: outDType ?? va.dtype, shape }], {}, '', name)[0]!;
  }

  protected unary(op: string, x: Value): Value {
    return this.emit(op, [x], [{ dtype: x.dtype, shape: x.shape }])[0]!;
  }

  private operands(name: string, a: Operand, b: Operand): [Value, Value] {
    if (typeof a === 'number' && typeof b === 'number') {
      throw new GraphError('BAD_ARGUMENT', 'at least one operand must be a graph value', name);
    }
    const va = typeof a === 'number' ? this.scalar(a, (b as Value).dtype) : a;
    const vb = typeof b === 'number' ? this.scalar(b, va.dtype) : b;
    return [va, vb];
  }

  protected sameDType(name: string, ...vs: Value[]): void {
    const d = vs[0]!.dtype;
    for (const v of vs) {
      if (v.dtype !== d) throw new GraphError('DTYPE_MISMATCH', `operand dtypes differ: ${vs.map(String).join(', ')}`, name);
    }
  }

  protected requireFloat(name: string, x: Value): void {
    if (!isFloat(x.dtype)) throw new GraphError('DTYPE_MISMATCH', `expected a float tensor, got ${x}`, name);
  }

  protected axis(name: string, axis: number, rank: number): number {
    const a = normAxis(axis, rank);
    if (a === undefined) throw new GraphError('RANK_MISMATCH', `axis ${axis} out of range for rank ${rank}`, name);
    return a;
  }

  private normChecks(name: string, x: Value, scale: Value, bias: Value | undefined): void {
    this.requireFloat(name, x);
    this.sameDType(name, x, scale, ...(bias ? [bias] : []));
    const last = x.shape[x.rank - 1]!;
    for (const p of bias ? [scale, bias] : [scale]) {
      if (p.rank !== 1 || !dimsCompatible(p.shape[0]!, last)) {
        throw new GraphError('SHAPE_MISMATCH', `norm parameter ${p} does not match the last dim of ${x}`, name);
      }
    }
  }

  private reduce(op: string, x: Value, axes: readonly number[], keepdims: boolean): Value {
    const name = this.nodeName(op);
    const norm = axes.map((a) => this.axis(name, a, x.rank));
    const shape: Shape = keepdims ? x.shape.map((d, i) => (norm.includes(i) ? 1 : d)) : x.shape.filter((_, i) => !norm.includes(i));
    return this.emit(
      op,
      [x, this.ints(axes)],
      [{ dtype: x.dtype, shape }],
      {
        keepdims: { int: keepdims ? 1 : 0 },
      },
      '',
      name,
    )[0]!;
  }

  /** Throws a SHAPE_MISMATCH naming `name` unless `shape` matches `expect` (symbolic dims pass). */
  protected expectShape(name: string, v: Value, expect: Shape): void {
    const ok = v.rank === expect.length && v.shape.every((d, i) => dimsCompatible(d, expect[i]!));
    if (!ok) throw new GraphError('SHAPE_MISMATCH', `expected ${formatShape(expect)}, got ${v}`, name);
  }
}
