import { type DType, floatData } from './dtype.js';
import { GraphError } from './errors.js';
import type { Graph } from './graph.js';
import { flagAttr, intAttr } from './graph-core.js';
import { checkAxis, requireIndex, sameDType } from './op-checks.js';
import { broadcastShapes, type Dim, dimProduct, dimsCompatible, formatShape, type Shape } from './shape.js';
import type { Value } from './value.js';

/** Shape manipulation, indexing and data movement: methods of `Graph` (graph.ts mixes them in). */
export class TensorOps {
  /**
   * Reshape to a constant target (0 copies the input dim, -1 is inferred), or
   * to a runtime shape value with the caller's `outShape` for the result.
   */
  reshape(this: Graph, x: Value, target: readonly number[] | Value, outShape?: Shape): Value {
    const name = this.nodeName('Reshape');
    if (!Array.isArray(target)) {
      const t = target as Value;
      if (t.dtype !== 'int64' || t.rank !== 1) throw new GraphError('DTYPE_MISMATCH', `Reshape target must be int64 1-D, got ${t}`, name);
      const shape = outShape ?? Array.from({ length: Number(t.shape[0]) }, () => this.freshDim('d'));
      return this.emit('Reshape', [x, t], [{ dtype: x.dtype, shape }], {}, '', name)[0]!;
    }
    const dims = target as readonly number[];
    const out: Dim[] = dims.map((d, i) => {
      if (d === 0) {
        const src = x.shape[i];
        if (src === undefined) throw new GraphError('SHAPE_MISMATCH', `Reshape 0 at axis ${i} but ${x} has rank ${x.rank}`, name);
        return src;
      }
      return d;
    });
    const minus = dims.filter((d) => d === -1).length;
    if (minus > 1) throw new GraphError('BAD_ARGUMENT', 'Reshape allows at most one -1', name);
    const total = dimProduct(x.shape);
    if (minus === 1) {
      const known = dimProduct(out.filter((d) => d !== -1));
      let inferred: Dim;
      if (typeof total === 'number' && typeof known === 'number') {
        if (known === 0 || total % known !== 0) {
          throw new GraphError('SHAPE_MISMATCH', `cannot reshape ${x} to ${formatShape(dims)}`, name);
        }
        inferred = total / known;
      } else {
        inferred = cancel(total, known) ?? this.freshDim('d');
      }
      out[out.indexOf(-1)] = inferred;
    } else if (typeof total === 'number') {
      const prod = dimProduct(out);
      if (typeof prod === 'number' && prod !== total) {
        throw new GraphError('SHAPE_MISMATCH', `cannot reshape ${x} (${total} elements) to ${formatShape(dims)}`, name);
      }
    }
    return this.emit('Reshape', [x, this.ints(dims)], [{ dtype: x.dtype, shape: outShape ?? out }], {}, '', name)[0]!;
  }

  transpose(this: Graph, x: Value, perm: readonly number[]): Value {
    const name = this.nodeName('Transpose');
    const sorted = [...perm].sort((a, b) => a - b);
    if (perm.length !== x.rank || sorted.some((p, i) => p !== i)) {
      throw new GraphError('BAD_ARGUMENT', `perm [${perm.join(', ')}] is not a permutation of ${x}'s axes`, name);
    }
    return this.emit('Transpose', [x], [{ dtype: x.dtype, shape: perm.map((p) => x.shape[p]!) }], { perm: { ints: perm } }, '', name)[0]!;
  }

  concat(this: Graph, xs: readonly Value[], axis: number): Value {
    const name = this.nodeName('Concat');
    if (xs.length === 0) throw new GraphError('BAD_ARGUMENT', 'Concat of nothing', name);
    const first = xs[0]!;
    sameDType(name, ...xs);
    const ax = checkAxis(name, axis, first.rank);
    for (const v of xs) {
      const ok = v.rank === first.rank && v.shape.every((d, i) => i === ax || dimsCompatible(d, first.shape[i]!));
      if (!ok) throw new GraphError('SHAPE_MISMATCH', `Concat on axis ${axis}: ${v} does not match ${first}`, name);
    }
    const shape = first.shape.map((d, i) => (i === ax ? sumDims(xs.map((v) => v.shape[ax]!)) : d));
    return this.emit('Concat', xs, [{ dtype: first.dtype, shape }], { axis: { int: axis } }, '', name)[0]!;
  }

  /** Split into pieces of the given sizes along `axis`. */
  split(this: Graph, x: Value, sizes: readonly number[], axis: number): Value[] {
    const name = this.nodeName('Split');
    const ax = checkAxis(name, axis, x.rank);
    const d = x.shape[ax]!;
    const total = sizes.reduce((a, b) => a + b, 0);
    if (typeof d === 'number' && d !== total) {
      throw new GraphError('SHAPE_MISMATCH', `Split sizes [${sizes.join(', ')}] sum to ${total}, axis ${axis} of ${x} is ${d}`, name);
    }
    const outs = sizes.map((s) => ({ dtype: x.dtype, shape: x.shape.map((dd, i) => (i === ax ? s : dd)) }));
    return this.emit('Split', [x, this.ints(sizes)], outs, { axis: { int: axis } }, '', name);
  }

  /**
   * Split into `count` pieces whose sizes along `axis` are known only at run time: `sizes` is an int64 [count]
   * tensor (zeros allowed) summing to that axis. Each piece's size is a fresh symbolic dim.
   */
  splitDynamic(this: Graph, x: Value, sizes: Value, count: number, axis: number): Value[] {
    const name = this.nodeName('Split');
    const ax = checkAxis(name, axis, x.rank);
    requireIndex(name, sizes);
    if (sizes.rank !== 1 || (typeof sizes.shape[0] === 'number' && sizes.shape[0] !== count)) {
      throw new GraphError('SHAPE_MISMATCH', `Split sizes ${sizes} must be int64 [${count}]`, name);
    }
    const outs = Array.from({ length: count }, () => ({
      dtype: x.dtype,
      shape: x.shape.map((d, i) => (i === ax ? this.freshDim('split') : d)),
    }));
    return this.emit('Split', [x, sizes], outs, { axis: { int: axis } }, '', name);
  }

  /** Slice with constant starts/ends (use large ends for "to the end"). */
  slice(
    this: Graph,
    x: Value,
    starts: readonly number[],
    ends: readonly number[],
    axes: readonly number[],
    steps?: readonly number[],
  ): Value {
    const name = this.nodeName('Slice');
    const shape = [...x.shape];
    axes.forEach((a, k) => {
      const ax = checkAxis(name, a, x.rank);
      const d = x.shape[ax]!;
      const step = steps?.[k] ?? 1;
      if (typeof d !== 'number') {
        shape[ax] = this.freshDim('slice');
        return;
      }
      const clamp = (v: number, lo: number, hi: number) => Math.min(Math.max(v, lo), hi);
      let s = starts[k]!;
      let e = ends[k]!;
      s = s < 0 ? s + d : s;
      e = e < 0 ? e + d : e;
      if (step > 0) {
        s = clamp(s, 0, d);
        e = clamp(e, 0, d);
        shape[ax] = Math.max(0, Math.ceil((e - s) / step));
      } else {
        s = clamp(s, -1, d - 1);
        e = clamp(e, -1, d - 1);
        shape[ax] = Math.max(0, Math.ceil((e - s) / step));
      }
    });
    const inputs = [x, this.ints(starts), this.ints(ends), this.ints(axes), steps ? this.ints(steps) : undefined];
    return this.emit('Slice', inputs, [{ dtype: x.dtype, shape }], {}, '', name)[0]!;
  }

  /** Slice with runtime starts/ends (int64 1-D values). */
  sliceDynamic(this: Graph, x: Value, starts: Value, ends: Value, axes: readonly number[], outShape: Shape): Value {
    return this.emit('Slice', [x, starts, ends, this.ints(axes)], [{ dtype: x.dtype, shape: outShape }])[0]!;
  }

  gather(this: Graph, x: Value, indices: Value, axis = 0): Value {
    const name = this.nodeName('Gather');
    const ax = checkAxis(name, axis, x.rank);
    requireIndex(name, indices);
    const shape = [...x.shape.slice(0, ax), ...indices.shape, ...x.shape.slice(ax + 1)];
    return this.emit('Gather', [x, indices], [{ dtype: x.dtype, shape }], { axis: { int: axis } }, '', name)[0]!;
  }

  gatherElements(this: Graph, x: Value, indices: Value, axis: number): Value {
    const name = this.nodeName('GatherElements');
    checkAxis(name, axis, x.rank);
    requireIndex(name, indices);
    if (indices.rank !== x.rank)
      throw new GraphError('RANK_MISMATCH', `GatherElements indices ${indices} must have the rank of ${x}`, name);
    return this.emit('GatherElements', [x, indices], [{ dtype: x.dtype, shape: indices.shape }], { axis: { int: axis } }, '', name)[0]!;
  }

  gatherND(this: Graph, x: Value, indices: Value, batchDims = 0): Value {
    const name = this.nodeName('GatherND');
    requireIndex(name, indices);
    const k = indices.shape[indices.rank - 1];
    if (typeof k !== 'number') throw new GraphError('SHAPE_MISMATCH', `GatherND needs a static last dim on ${indices}`, name);
    const shape = [...indices.shape.slice(0, -1), ...x.shape.slice(batchDims + k)];
    return this.emit(
      'GatherND',
      [x, indices],
      [{ dtype: x.dtype, shape }],
      { batch_dims: batchDims ? { int: batchDims } : undefined },
      '',
      name,
    )[0]!;
  }

  scatterND(this: Graph, x: Value, indices: Value, updates: Value, reduction?: 'add' | 'mul' | 'max' | 'min'): Value {
    const name = this.nodeName('ScatterND');
    requireIndex(name, indices);
    sameDType(name, x, updates);
    return this.emit(
      'ScatterND',
      [x, indices, updates],
      [{ dtype: x.dtype, shape: x.shape }],
      {
        reduction: reduction ? { string: reduction } : undefined,
      },
      '',
      name,
    )[0]!;
  }

  /** Broadcast `x` to `shape` (constant dims, or a runtime int64 shape with `outShape`). */
  expand(this: Graph, x: Value, shape: readonly number[] | Value, outShape?: Shape): Value {
    const name = this.nodeName('Expand');
    if (Array.isArray(shape)) {
      const out = broadcastShapes(x.shape, shape as readonly number[]);
      if (out === undefined) throw new GraphError('SHAPE_MISMATCH', `cannot expand ${x} to ${formatShape(shape as number[])}`, name);
      return this.emit('Expand', [x, this.ints(shape as number[])], [{ dtype: x.dtype, shape: outShape ?? out }], {}, '', name)[0]!;
    }
    const s = shape as Value;
    const out = outShape ?? Array.from({ length: Number(s.shape[0]) }, () => this.freshDim('e'));
    return this.emit('Expand', [x, s], [{ dtype: x.dtype, shape: out }], {}, '', name)[0]!;
  }

  unsqueeze(this: Graph, x: Value, axes: readonly number[]): Value {
    const name = this.nodeName('Unsqueeze');
    const rank = x.rank + axes.length;
    const norm = axes.map((a) => checkAxis(name, a, rank)).sort((a, b) => a - b);
    const shape: Dim[] = [];
    let src = 0;
    for (let i = 0; i < rank; i++) shape.push(norm.includes(i) ? 1 : x.shape[src++]!);
    return this.emit('Unsqueeze', [x, this.ints(axes)], [{ dtype: x.dtype, shape }], {}, '', name)[0]!;
  }

  squeeze(this: Graph, x: Value, axes: readonly number[]): Value {
    const name = this.nodeName('Squeeze');
    const norm = axes.map((a) => checkAxis(name, a, x.rank));
    for (const a of norm) {
      const d = x.shape[a];
      if (typeof d === 'number' && d !== 1) throw new GraphError('SHAPE_MISMATCH', `cannot squeeze axis ${a} of ${x}`, name);
    }
    const shape = x.shape.filter((_, i) => !norm.includes(i));
    return this.emit('Squeeze', [x, this.ints(axes)], [{ dtype: x.dtype, shape }], {}, '', name)[0]!;
  }

  /** The runtime shape of `x` as int64 [rank], optionally a [start, end) part. */
  shapeOf(this: Graph, x: Value, start?: number, end?: number): Value {
    const s = start ?? 0;
    const e = end ?? x.rank;
    const len = Math.max(0, (e < 0 ? e + x.rank : e) - (s < 0 ? s + x.rank : s));
    return this.emit('Shape', [x], [{ dtype: 'int64', shape: [len] }], {
      start: intAttr(start),
      end: intAttr(end),
    })[0]!;
  }

  /** Indices of the nonzero (true) elements: int64 [rank, count], count known only at run time. */
  nonZero(this: Graph, x: Value): Value {
    return this.emit('NonZero', [x], [{ dtype: 'int64', shape: [x.rank, this.freshDim('nonzero')] }])[0]!;
  }

  /** A tensor of `shape` (runtime int64) filled with `value`. */
  constantOfShape(this: Graph, shape: Value, value: number, dtype: DType, outShape?: Shape): Value {
    const data =
      dtype === 'int64'
        ? new BigInt64Array([BigInt(value)])
        : dtype === 'bool'
          ? new Uint8Array([value ? 1 : 0])
          : dtype === 'float32' || dtype === 'float16' || dtype === 'bfloat16'
            ? floatData(dtype, [value])
            : undefined;
    if (data === undefined) {
      throw new GraphError(
        'BAD_ARGUMENT',
        `constantOfShape supports float32, float16, bfloat16, int64 and bool, not ${dtype}`,
        this.scoped('ConstantOfShape'),
      );
    }
    const out = outShape ?? Array.from({ length: Number(shape.shape[0]) }, () => this.freshDim('c'));
    return this.emit('ConstantOfShape', [shape], [{ dtype, shape: out }], { value: { tensor: { dtype, shape: [1], data } } })[0]!;
  }

  /** Range(start, limit, delta) of scalar values; `length` names the result's dim. */
  range(this: Graph, start: Value, limit: Value, delta: Value, length?: Dim): Value {
    const name = this.nodeName('Range');
    sameDType(name, start, limit, delta);
    return this.emit('Range', [start, limit, delta], [{ dtype: start.dtype, shape: [length ?? this.freshDim('range')] }], {}, '', name)[0]!;
  }

  tile(this: Graph, x: Value, repeats: readonly number[]): Value {
    const name = this.nodeName('Tile');
    if (repeats.length !== x.rank) throw new GraphError('RANK_MISMATCH', `Tile repeats [${repeats.join(', ')}] for ${x}`, name);
    const shape = x.shape.map((d, i) => (repeats[i] === 1 ? d : typeof d === 'number' ? d * repeats[i]! : `${d}*${repeats[i]}`));
    return this.emit('Tile', [x, this.ints(repeats)], [{ dtype: x.dtype, shape }], {}, '', name)[0]!;
  }

  /** Resize (opset 19) by constant scales, e.g. area-like 'linear' downsampling or 'nearest'. */
  resize(
    this: Graph,
    x: Value,
    scales: readonly number[],
    mode: 'nearest' | 'linear' | 'cubic',
    opts: { antialias?: boolean; coordinateTransformation?: string } = {},
  ): Value {
    const name = this.nodeName('Resize');
    if (scales.length !== x.rank) throw new GraphError('RANK_MISMATCH', `Resize scales for ${x}`, name);
    const shape = x.shape.map((d, i) => (typeof d === 'number' ? Math.floor(d * scales[i]!) : scales[i] === 1 ? d : this.freshDim('r')));
    const sc = this.constant('float32', [scales.length], scales);
    return this.emit(
      'Resize',
      [x, undefined, sc],
      [{ dtype: x.dtype, shape }],
      {
        mode: { string: mode },
        antialias: flagAttr(opts.antialias),
        coordinate_transformation_mode: opts.coordinateTransformation ? { string: opts.coordinateTransformation } : undefined,
      },
      '',
      name,
    )[0]!;
  }

  /** 2-D convolution, NCHW, weight [Cout, Cin/group, kh, kw]. */
  conv(this: Graph, x: Value, w: Value, b: Value | undefined, opts: { strides?: number[]; pads?: number[]; group?: number } = {}): Value {
    const name = this.nodeName('Conv');
    sameDType(name, x, w, ...(b ? [b] : []));
    if (x.rank !== 4 || w.rank !== 4) throw new GraphError('RANK_MISMATCH', `Conv expects NCHW input and 4-D weight, got ${x}, ${w}`, name);
    const group = opts.group ?? 1;
    const cin = x.shape[1]!;
    const wc = w.shape[1]!;
    if (typeof cin === 'number' && typeof wc === 'number' && cin !== wc * group) {
      throw new GraphError('SHAPE_MISMATCH', `Conv input channels ${cin} != weight ${wc} x group ${group}`, name);
    }
    const strides = opts.strides ?? [1, 1];
    const pads = opts.pads ?? [0, 0, 0, 0];
    const outDim = (d: Dim, k: Dim, s: number, p0: number, p1: number): Dim =>
      typeof d === 'number' && typeof k === 'number' ? Math.floor((d + p0 + p1 - k) / s) + 1 : this.freshDim('conv');
    const shape = [
      x.shape[0]!,
      w.shape[0]!,
      outDim(x.shape[2]!, w.shape[2]!, strides[0]!, pads[0]!, pads[2]!),
      outDim(x.shape[3]!, w.shape[3]!, strides[1]!, pads[1]!, pads[3]!),
    ];
    return this.emit(
      'Conv',
      [x, w, b],
      [{ dtype: x.dtype, shape }],
      {
        strides: { ints: strides },
        pads: { ints: pads },
        group: group !== 1 ? { int: group } : undefined,
      },
      '',
      name,
    )[0]!;
  }
}

function sumDims(ds: readonly Dim[]): Dim {
  if (ds.every((d) => typeof d === 'number')) return (ds as number[]).reduce((a, b) => a + b, 0);
  return ds.join('+');
}

/** total / known for symbolic products when `known` divides out a factor exactly. */
function cancel(total: Dim, known: Dim): Dim | undefined {
  if (typeof total !== 'string') return undefined;
  const parts = total.split('*');
  const kparts = typeof known === 'number' ? (known === 1 ? [] : [String(known)]) : known.split('*');
  for (const k of kparts) {
    const i = parts.indexOf(k);
    if (i < 0) {
      // a numeric factor can divide the numeric part of total
      const num = Number(parts[0]);
      const kn = Number(k);
      if (!Number.isNaN(num) && !Number.isNaN(kn) && num % kn === 0) {
        parts[0] = String(num / kn);
        continue;
      }
      return undefined;
    }
    parts.splice(i, 1);
  }
  const rest = parts.filter((p) => p !== '1');
  if (rest.length === 0) return 1;
  const all = rest.every((p) => !Number.isNaN(Number(p)));
  return all ? rest.reduce((a, p) => a * Number(p), 1) : rest.join('*');
}
