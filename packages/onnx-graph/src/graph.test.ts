import { describe, expect, it } from 'vitest';
import { GraphError } from './errors.js';
import { Graph } from './graph.js';
import { modelBytes } from './model.js';
import * as nn from './nn.js';
import { tensorFromArray } from './tensor-ref.js';
import { maxAbsDiff, randn, runGraph } from './test-utils/ort.js';
import { Weights } from './weights.js';

/** Plain-TypeScript reference: x [n, k] times W^T (W [m, k]) plus b. */
function linearRef(x: Float32Array, n: number, k: number, w: Float32Array, m: number, b?: Float32Array): Float32Array {
  const y = new Float32Array(n * m);
  for (let i = 0; i < n; i++)
    for (let j = 0; j < m; j++) {
      let s = b ? b[j]! : 0;
      for (let t = 0; t < k; t++) s += x[i * k + t]! * w[j * k + t]!;
      y[i * m + j] = s;
    }
  return y;
}

function layerNormRef(x: Float32Array, n: number, d: number, gamma: Float32Array, beta: Float32Array, eps: number): Float32Array {
  const y = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    let mean = 0;
    for (let j = 0; j < d; j++) mean += x[i * d + j]!;
    mean /= d;
    let v = 0;
    for (let j = 0; j < d; j++) v += (x[i * d + j]! - mean) ** 2;
    v /= d;
    for (let j = 0; j < d; j++) y[i * d + j] = ((x[i * d + j]! - mean) / Math.sqrt(v + eps)) * gamma[j]! + beta[j]!;
  }
  return y;
}

describe('Graph', () => {
  it('two matmuls and a layer norm match a plain TypeScript computation within 1e-5', async () => {
    const [n, d, h] = [5, 8, 16];
    const w1 = randn(h * d, 1);
    const b1 = randn(h, 2);
    const w2 = randn(d * h, 3).map((v) => v * 0.25);
    const gamma = randn(d, 4).map((v) => 1 + 0.1 * v);
    const beta = randn(d, 5).map((v) => 0.1 * v);
    const weights = Weights.from({
      'fc1.weight': tensorFromArray('float32', [h, d], w1),
      'fc1.bias': tensorFromArray('float32', [h], b1),
      'fc2.weight': tensorFromArray('float32', [d, h], w2),
      'norm.weight': tensorFromArray('float32', [d], gamma),
      'norm.bias': tensorFromArray('float32', [d], beta),
    });
    const g = new Graph();
    const x = g.input('x', 'float32', ['n', d]);
    const y1 = nn.linear(g, x, weights, 'fc1', { out: h });
    const y2 = nn.linear(g, y1, weights, 'fc2', { bias: false, out: d });
    const out = nn.layerNorm(g, y2, weights, 'norm', 1e-5);
    expect(out.shape).toEqual(['n', d]);
    g.output(out, 'y');

    const xs = randn(n * d, 6);
    const res = await runGraph(g, { x: { dtype: 'float32', dims: [n, d], data: xs } });
    const ref = layerNormRef(linearRef(linearRef(xs, n, d, w1, h, b1), n, h, w2, d), n, d, gamma, beta, 1e-5);
    expect(res.y!.dims).toEqual([n, d]);
    expect(maxAbsDiff(res.y!.data as Float32Array, ref)).toBeLessThan(1e-5);
  });

  it('catches a shape mismatch at build time and names the scoped node', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', ['n', 8]);
    const w = g.constant('float32', [7, 4], new Float32Array(28));
    let err: unknown;
    try {
      g.scope('vision', () => g.scope('blocks.3', () => g.scope('attn', () => g.matmul(x, w))));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GraphError);
    expect((err as GraphError).code).toBe('SHAPE_MISMATCH');
    expect((err as GraphError).node).toBe('vision.blocks.3.attn.MatMul');
    expect((err as GraphError).message).toContain('vision.blocks.3.attn.MatMul');
  });

  it('catches dtype mismatches and bad parameter shapes', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', [2, 3]);
    const i = g.input('i', 'int64', [2, 3]);
    expect(() => g.add(x, i)).toThrow(/Add: operand dtypes differ/);
    const w = Weights.from({ 'fc.weight': tensorFromArray('float32', [4, 5], new Float32Array(20)) });
    expect(() => nn.linear(g, x, w, 'fc', { bias: false, in: 3, out: 4 })).toThrow(/has shape \[4, 5\], expected \[4, 3\]/);
    expect(() => nn.linear(g, x, w, 'fc2', { out: 4 })).toThrow(/missing parameter 'fc2.weight'. Nearest present: 'fc.weight'/);
  });

  it('infers symbolic shapes through reshape, transpose and concat', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', ['S', 64]);
    const r = g.reshape(x, [0, 4, 16]);
    expect(r.shape).toEqual(['S', 4, 16]);
    const t = g.transpose(r, [1, 0, 2]);
    expect(t.shape).toEqual([4, 'S', 16]);
    const back = g.reshape(g.transpose(t, [1, 0, 2]), [-1, 64]);
    expect(back.shape).toEqual(['S', 64]);
    const c = g.concat([x, x], 0);
    expect(c.shape).toEqual(['S+S', 64]);
    const m = g.reshape(x, [-1, 4, 64]);
    expect(typeof m.shape[0]).toBe('string');
  });

  it('builds deterministically: the same graph twice gives the same bytes', async () => {
    const build = async () => {
      const w = Weights.from({ 'fc.weight': tensorFromArray('float32', [3, 4], randn(12, 9)) });
      const g = new Graph();
      const x = g.input('x', 'float32', ['b', 4]);
      g.output(g.softmax(nn.linear(g, x, w, 'fc', { bias: false, out: 3 })), 'y');
      return modelBytes(g);
    };
    const [a, b] = [await build(), await build()];
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
  });

  it('names a shared constant made after others were pruned apart from the ones kept', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', [2]);
    g.add(x, g.scalar(1, 'float32')); // const.float32.0, read by a node dropped below
    g.output(g.mul(x, g.scalar(2, 'float32')), 'y'); // const.float32.1
    g.nodes.splice(0, 1);
    g.pruneInitializers();
    const three = g.scalar(3, 'float32');
    expect(three.name).not.toBe('const.float32.1');
    g.output(g.add(x, three), 'z');
    expect(g.snapshot().initializers.map((t) => t.name)).toEqual(['const.float32.1', three.name]);
  });

  it('stores a tensor embedded twice (tied weights) once', () => {
    const g = new Graph();
    const ref = tensorFromArray('float32', [2, 2], new Float32Array(4));
    const a = g.initializer('embed_tokens.weight', ref);
    const b = g.initializer('lm_head.weight', ref);
    expect(a).toBe(b);
    expect(g.snapshot().initializers).toHaveLength(1);
  });
});

describe('one Graph class', () => {
  it('has no superclass; every op, com.microsoft ones included, is its own method', () => {
    expect(Object.getPrototypeOf(Graph.prototype)).toBe(Object.prototype);
    const own = Object.getOwnPropertyNames(Graph.prototype);
    for (const op of [
      'add',
      'matmul',
      'reshape',
      'attention',
      'loop',
      'if',
      'skipSimplifiedLayerNorm',
      'groupQueryAttentionWithBias',
      'moe',
    ]) {
      expect(own, op).toContain(op);
    }
    // A body is a Graph too.
    const g = new Graph();
    const x = g.input('x', 'float32', [2]);
    let body: unknown;
    g.if(
      g.constant('bool', [], [1]),
      (b) => {
        body = b;
        return [b.neg(x)];
      },
      (b) => [b.abs(x)],
    );
    expect(body).toBeInstanceOf(Graph);
  });
});
