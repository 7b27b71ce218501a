import { describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import { maxAbsDiff, randn, runGraph } from './test-utils/ort.js';
import type { Value } from './value.js';

type Case = {
  name: string;
  build: (g: Graph, x: Value) => Value;
  /** Reference on the flat input [2, 3, 4]; omitted when only the shape is checked. */
  ref?: (x: Float32Array) => number[];
};

const X = randn(24, 11);
const idx = (i: number, j: number, k: number) => X[i * 12 + j * 4 + k]!;
const erf = (v: number) => {
  // Abramowitz-Stegun 7.1.26 is too coarse; integrate instead (Simpson, fine for a test oracle).
  const n = 2000;
  const h = v / n;
  let s = 0;
  for (let i = 0; i <= n; i++) s += (i === 0 || i === n ? 1 : i % 2 ? 4 : 2) * Math.exp(-((i * h) ** 2));
  return ((2 / Math.sqrt(Math.PI)) * s * h) / 3;
};

const cases: Case[] = [
  { name: 'add scalar', build: (g, x) => g.add(x, 1.5), ref: (x) => [...x].map((v) => v + 1.5) },
  { name: 'sub/mul/div', build: (g, x) => g.div(g.mul(g.sub(x, 1), 3), 2), ref: (x) => [...x].map((v) => ((v - 1) * 3) / 2) },
  { name: 'pow', build: (g, x) => g.pow(x, 2), ref: (x) => [...x].map((v) => v * v) },
  { name: 'silu', build: (g, x) => g.silu(x), ref: (x) => [...x].map((v) => v / (1 + Math.exp(-v))) },
  { name: 'quickGelu', build: (g, x) => g.quickGelu(x), ref: (x) => [...x].map((v) => v / (1 + Math.exp(-1.702 * v))) },
  { name: 'gelu exact', build: (g, x) => g.gelu(x), ref: (x) => [...x].map((v) => 0.5 * v * (1 + erf(v / Math.SQRT2))) },
  {
    name: 'gelu tanh',
    build: (g, x) => g.gelu(x, 'tanh'),
    ref: (x) => [...x].map((v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)))),
  },
  { name: 'cos/sin', build: (g, x) => g.add(g.cos(x), g.sin(x)), ref: (x) => [...x].map((v) => Math.cos(v) + Math.sin(v)) },
  {
    name: 'softmax',
    build: (g, x) => g.softmax(x, -1),
    ref: (x) => {
      const out: number[] = [];
      for (let r = 0; r < 6; r++) {
        const row = [...x.slice(r * 4, r * 4 + 4)];
        const m = Math.max(...row);
        const e = row.map((v) => Math.exp(v - m));
        const s = e.reduce((a, b) => a + b);
        out.push(...e.map((v) => v / s));
      }
      return out;
    },
  },
  {
    name: 'rmsNorm',
    build: (g, x) => g.rmsNorm(x, g.constant('float32', [4], [1, 2, 3, 4]), 1e-6),
    ref: (x) => {
      const out: number[] = [];
      for (let r = 0; r < 6; r++) {
        const row = [...x.slice(r * 4, r * 4 + 4)];
        const ms = row.reduce((a, b) => a + b * b, 0) / 4;
        out.push(...row.map((v, j) => (v / Math.sqrt(ms + 1e-6)) * (j + 1)));
      }
      return out;
    },
  },
  {
    name: 'transpose',
    build: (g, x) => g.transpose(x, [2, 0, 1]),
    ref: () => [0, 1, 2, 3].flatMap((k) => [0, 1].flatMap((i) => [0, 1, 2].map((j) => idx(i, j, k)))),
  },
  { name: 'reshape -1', build: (g, x) => g.reshape(x, [-1, 6]) },
  {
    name: 'slice',
    build: (g, x) => g.slice(x, [1], [3], [1]),
    ref: () => [0, 1].flatMap((i) => [1, 2].flatMap((j) => [0, 1, 2, 3].map((k) => idx(i, j, k)))),
  },
  {
    name: 'slice step 2',
    build: (g, x) => g.slice(x, [0], [100], [2], [2]),
    ref: () => [0, 1].flatMap((i) => [0, 1, 2].flatMap((j) => [0, 2].map((k) => idx(i, j, k)))),
  },
  { name: 'split', build: (g, x) => g.split(x, [1, 3], 2)[1]! },
  { name: 'concat', build: (g, x) => g.concat([x, x, x], 1) },
  { name: 'gather', build: (g, x) => g.gather(x, g.constant('int64', [2, 2], [2, 0, 1, 1]), 1) },
  { name: 'gatherElements', build: (g, x) => g.gatherElements(x, g.constant('int64', [2, 3, 1], [0, 1, 2, 3, 0, 1]), 2) },
  { name: 'gatherND', build: (g, x) => g.gatherND(x, g.constant('int64', [3, 2], [0, 1, 1, 2, 0, 0])) },
  { name: 'scatterND', build: (g, x) => g.scatterND(x, g.constant('int64', [1, 2], [1, 1]), g.constant('float32', [1, 4], [9, 9, 9, 9])) },
  { name: 'expand', build: (g, x) => g.expand(g.slice(x, [0], [1], [0]), [3, 3, 4]) },
  { name: 'unsqueeze/squeeze', build: (g, x) => g.squeeze(g.unsqueeze(x, [0, 3]), [0]) },
  { name: 'reduceSum', build: (g, x) => g.reduceSum(x, [1], false) },
  { name: 'reduceMean keepdims', build: (g, x) => g.reduceMean(x, [0, 2]) },
  { name: 'reduceMax', build: (g, x) => g.reduceMax(x, [-1]) },
  {
    name: 'cumsum',
    build: (g, x) => g.cumsum(x, 2),
    ref: (x) => [...x].map((_, i) => [...x.slice(i - (i % 4), i + 1)].reduce((a, b) => a + b)),
  },
  { name: 'topk values', build: (g, x) => g.topk(x, 2, -1)[0] },
  { name: 'topk indices', build: (g, x) => g.cast(g.topk(x, 2, -1)[1], 'float32') },
  { name: 'where', build: (g, x) => g.where(g.greater(x, 0), x, 0), ref: (x) => [...x].map((v) => (v > 0 ? v : 0)) },
  {
    name: 'cast roundtrip',
    build: (g, x) => g.cast(g.cast(g.mul(x, 10), 'int64'), 'float32'),
    ref: (x) => [...x].map((v) => Math.trunc(v * 10)),
  },
  { name: 'tile', build: (g, x) => g.tile(x, [1, 2, 1]) },
  { name: 'matmul batched', build: (g, x) => g.matmul(x, g.transpose(x, [0, 2, 1])) },
  {
    name: 'gemm',
    build: (g, x) => g.gemm(g.reshape(x, [6, 4]), g.constant('float32', [5, 4], new Float32Array(20).fill(1)), undefined, { transB: true }),
  },
  { name: 'resize linear', build: (g, x) => g.resize(g.reshape(x, [1, 2, 3, 4]), [1, 1, 1, 0.5], 'linear') },
  {
    name: 'conv',
    build: (g, x) =>
      g.conv(g.reshape(x, [1, 2, 3, 4]), g.constant('float32', [3, 2, 2, 2], new Float32Array(24).fill(0.5)), undefined, {
        strides: [1, 2],
      }),
  },
  {
    name: 'range',
    build: (g) => g.cast(g.range(g.scalar(0, 'int64'), g.scalar(5, 'int64'), g.scalar(1, 'int64'), 5), 'float32'),
    ref: () => [0, 1, 2, 3, 4],
  },
  {
    name: 'nonZero',
    build: (g, x) => g.cast(g.nonZero(g.greater(g.slice(x, [0], [1], [0]), 0.5)), 'float32'),
    ref: (x) => {
      const hits = [...x.slice(0, 12)].flatMap((v, i) => (v > 0.5 ? [[0, Math.floor(i / 4), i % 4]] : []));
      return [0, 1, 2].flatMap((axis) => hits.map((h) => h[axis]!));
    },
  },
  { name: 'shape', build: (g, x) => g.cast(g.shapeOf(x), 'float32'), ref: () => [2, 3, 4] },
];

describe('ops run in ORT with the shapes the builder inferred', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const g = new Graph();
      const x = g.input('x', 'float32', [2, 3, 4]);
      const y = c.build(g, x);
      g.output(y, 'y');
      const out = await runGraph(g, { x: { dtype: 'float32', dims: [2, 3, 4], data: X } });
      expect(out.y!.dims).toHaveLength(y.rank);
      y.shape.forEach((d, i) => {
        if (typeof d === 'number') expect(out.y!.dims[i]).toBe(d);
      });
      if (c.ref) expect(maxAbsDiff(Array.from(out.y!.data as Float32Array, Number), c.ref(X))).toBeLessThan(1e-5);
    });
  }
});
