import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { GraphError } from './errors.js';
import { Graph } from './graph.js';
import { everyNode } from './nodes.js';
import { loadModelProto, saveModel } from './save-model.node.js';
import { tensorFromArray } from './tensor-ref.js';
import { randn, runGraph } from './test-utils/ort.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** x [1, 4] times W^T (W [4, 4]) in plain TypeScript, float64 then rounded like the float32 MatMul (tolerance below). */
function step(x: Float32Array, w: Float32Array): Float32Array {
  return Float32Array.from({ length: 4 }, (_, j) => x.reduce((s, v, k) => s + v * w[j * 4 + k]!, 0));
}

/**
 * x_{i+1} = tanh(x_i W^T); carried: x [1, 4], a history growing one row per iteration [i + 1, 4]; scan: the
 * row sum per iteration; stop when iteration + 1 reaches `stop` (cond) or after `trips`.
 */
function buildLoop(w: Float32Array) {
  const g = new Graph();
  const x0 = g.input('x0', 'float32', [1, 4]);
  const trips = g.input('trips', 'int64', []);
  const stop = g.input('stop', 'int64', []);
  const W = g.initializer('w', tensorFromArray('float32', [4, 4], w));
  const r = g.loop(
    { trips, cond: g.constant('bool', [], [1]), carried: [x0, { value: x0, shape: ['rows', 4] }] },
    (b, { iteration, carried }) => {
      const [x, hist] = carried as [typeof x0, typeof x0];
      const next = b.tanh(b.matmul(x, b.transpose(W, [1, 0])));
      return {
        cond: b.less(b.add(iteration, b.scalar(1, 'int64')), stop),
        carried: [next, b.concat([hist, next], 0)],
        scans: [b.reduceSum(next, [0, 1], false)],
      };
    },
  );
  g.output(r.carried[0]!, 'x');
  g.output(r.carried[1]!, 'history');
  g.output(r.scans[0]!, 'sums');
  return g;
}

function reference(x0: Float32Array, w: Float32Array, iterations: number) {
  let x = x0;
  const history = [...x0];
  const sums: number[] = [];
  for (let i = 0; i < iterations; i++) {
    x = Float32Array.from(step(x, w), Math.tanh);
    history.push(...x);
    sums.push(x.reduce((a, b) => a + b, 0));
  }
  return { x, history, sums };
}

describe('Graph.loop', () => {
  const w = randn(16, 3).map((v) => v * 0.5);
  const x0 = randn(4, 4);

  for (const [trips, stop, runs] of [
    [5, 100, 5],
    [5, 3, 3],
    [0, 100, 0],
  ] as const) {
    it(`trips ${trips}, stop at ${stop}: ${runs} iterations; outer-scope weight, growing carried state and scan outputs match TypeScript`, async () => {
      const out = await runGraph(buildLoop(w), {
        x0: { dtype: 'float32', dims: [1, 4], data: x0 },
        trips: { dtype: 'int64', dims: [], data: [trips] },
        stop: { dtype: 'int64', dims: [], data: [stop] },
      });
      const ref = reference(x0, w, runs);
      expect(out.history!.dims).toEqual([runs + 1, 4]);
      expect(out.sums!.dims).toEqual([runs]);
      const close = (a: ArrayLike<number>, b: ArrayLike<number>) => {
        expect(a.length).toBe(b.length);
        for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!)).toBeLessThan(1e-5);
      };
      close(out.x!.data as Float32Array, ref.x);
      close(out.history!.data as Float32Array, ref.history);
      close(out.sums!.data as Float32Array, ref.sums);
    });
  }

  it('stores a weight used only in the body once, in the root graph', () => {
    const g = buildLoop(w);
    const snap = g.snapshot();
    expect(snap.initializers.filter((e) => e.name === 'w')).toHaveLength(1);
    const loop = snap.nodes.find((n) => n.opType === 'Loop')!;
    const body = loop.attribute!.find((a) => a.name === 'body')!.g!;
    expect(body.initializer ?? []).toEqual([]);
    expect(body.node!.some((n) => n.input!.includes('w'))).toBe(true);
  });

  it('refuses a body value used outside its body, and a carried value whose dtype changes', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', [2]);
    let leaked: typeof x | undefined;
    g.loop({ trips: g.scalar(2, 'int64'), carried: [x] }, (b, { cond, carried }) => {
      leaked = b.neg(carried[0]!);
      return { cond, carried: [leaked] };
    });
    expect(() => g.neg(leaked!)).toThrow(GraphError);
    expect(() =>
      g.loop({ trips: g.scalar(2, 'int64'), carried: [x] }, (b, { cond, carried }) => ({ cond, carried: [b.cast(carried[0]!, 'int64')] })),
    ).toThrow(/carried value 0/);
  });
});

describe('Graph.if', () => {
  it('runs the branch the condition picks; both read an outer-scope initializer', async () => {
    const build = () => {
      const g = new Graph();
      const x = g.input('x', 'float32', [3]);
      const c = g.input('c', 'bool', []);
      const k = g.constant('float32', [3], [1, 2, 3]);
      const [y] = g.if(
        c,
        (b) => [b.mul(x, k)],
        (b) => [b.concat([b.sub(x, k), x], 0)],
      );
      g.output(y!, 'y');
      return g;
    };
    const x = [0.5, -1, 4];
    for (const c of [1, 0]) {
      const out = await runGraph(build(), { x: { dtype: 'float32', dims: [3], data: x }, c: { dtype: 'bool', dims: [], data: [c] } });
      const want = c ? x.map((v, i) => v * (i + 1)) : [...x.map((v, i) => v - (i + 1)), ...x];
      expect(Array.from(out.y!.data as Float32Array)).toEqual(want);
    }
  });
});

describe('saveModel fold inside a body', () => {
  it('folds a bf16 weight read only by a Loop body into one float32 [in, out] root initializer; outputs identical', async () => {
    const w = Uint16Array.from(randn(32, 7), (v) => new Uint32Array(new Float32Array([v * 0.5]).buffer)[0]! >>> 16);
    const build = () => {
      const g = new Graph();
      const x0 = g.input('x0', 'float32', [1, 8]);
      const W = g.initializer('fc.weight', tensorFromArray('bfloat16', [8, 4].reverse(), w)); // [4, 8]: [out, in]
      const r = g.loop({ trips: g.scalar(3, 'int64'), carried: [x0] }, (b, { cond, carried }) => {
        const y = b.matmul(carried[0]!, b.transpose(b.cast(W, 'float32'), [1, 0])); // [1, 4]
        return { cond, carried: [b.concat([y, y], 1)] };
      });
      g.output(r.carried[0]!, 'x');
      return g;
    };
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-loop-fold-'));
    dirs.push(dir);
    const feeds = { x0: new ort.Tensor('float32', randn(8, 9), [1, 8]) };
    const outs: Float32Array[] = [];
    for (const fold of [false, true]) {
      const path = join(dir, `m-${fold}.onnx`);
      const saved = await saveModel(build(), path, { fold, externalThreshold: 16 });
      if (fold) expect(saved.foldedNodes).toBe(2);
      const s = await ort.InferenceSession.create(path, { executionProviders: ['cpu'], logSeverityLevel: 3 });
      outs.push((await s.run(feeds)).x!.data as Float32Array);
      await s.release();
    }
    expect(outs[1]).toEqual(outs[0]);
    const proto = await loadModelProto(join(dir, 'm-true.onnx'));
    const body = proto.graph!.node!.find((n) => n.opType === 'Loop')!.attribute!.find((a) => a.name === 'body')!.g!;
    expect(body.node!.map((n) => n.opType)).not.toContain('Cast');
    expect(body.node!.map((n) => n.opType)).not.toContain('Transpose');
    expect(proto.graph!.initializer!.map((t) => [t.dataType, t.dims!.map(Number)])).toContainEqual([1, [8, 4]]);
    expect(proto.graph!.initializer!.map((t) => t.name)).not.toContain('fc.weight');
  });
});

describe('everyNode', () => {
  it('walks subgraphs (If branches, nested), each node before its bodies', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', [2]);
    const c = g.input('c', 'bool', []);
    const [y] = g.if(
      c,
      (b) =>
        b.if(
          c,
          (bb) => [bb.neg(x)],
          (bb) => [bb.sqrt(x)],
        ),
      (b) => [b.exp(b.abs(x))],
    );
    g.output(y!, 'y');
    const ops = [...everyNode(g.snapshot().nodes)].map((n) => n.opType);
    expect(ops).toEqual(['If', 'If', 'Neg', 'Sqrt', 'Abs', 'Exp', 'Identity']);
    expect(g.snapshot().nodes.map((n) => n.opType)).toEqual(['If', 'Identity']);
  });
});
