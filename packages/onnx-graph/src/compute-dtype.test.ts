// 16-bit compute: which ops ORT's CPU EP runs in float16 / bfloat16 (the README's table, re-measured here so
// it cannot go stale), rounding numbers into 16-bit constants, and emulateInFloat32 against a direct computation.
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bf16ToF32, f32ToBf16 } from '@vlmkit/safetensors';
import ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { emulateInFloat32 } from './emulate.js';
import { Graph } from './graph.js';
import { MS_DOMAIN } from './graph-core.js';
import { serializeModel } from './model.js';
import { quantizeLinearPass } from './passes/quantize-linear.js';
import { applyPasses } from './passes/rewrite.js';
import { randn } from './test-utils/ort.js';
import type { Value } from './value.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

type Half = 'float16' | 'bfloat16';
const [B, S, D, H] = [1, 4, 16, 2];

/** One op on float32 inputs cast to `dt` (graph I/O stays float32: onnxruntime-node has no bfloat16 tensors). */
const PROBES: Record<string, (g: Graph, x: (name?: string, shape?: number[]) => Value, c: (shape: number[]) => Value) => Value> = {
  MatMul: (g, x, c) => g.matmul(x(), c([D, D])),
  Gemm: (g, x, c) => g.gemm(g.reshape(x(), [-1, D]), c([D, D]), undefined, { transB: true }),
  Add: (g, x) => g.add(x(), 1.5),
  Mul: (g, x) => g.mul(x(), 1.5),
  Div: (g, x) => g.div(x(), 1.5),
  Sigmoid: (g, x) => g.sigmoid(x()),
  Gelu: (g, x) => g.gelu(x()),
  Softmax: (g, x) => g.softmax(x(), -1),
  LayerNormalization: (g, x, c) => g.layerNorm(x(), c([D]), c([D]), 1e-5),
  RMSNormalization: (g, x, c) => g.rmsNorm(x(), c([D]), 1e-5),
  Attention: (g, x) => g.attention(x('q'), x('k'), x('v'), { qNumHeads: H, kvNumHeads: H, scale: 0.3 }).out,
  MultiHeadAttention: (g, x) => g.multiHeadAttention(x('q'), x('k'), x('v'), { numHeads: H, scale: 0.3 }).out,
  RotaryEmbedding: (g, x, c) => g.rotaryEmbedding(x(), c([B, S, D / H / 2]), c([B, S, D / H / 2]), { interleaved: false, numHeads: H }),
  Conv: (g, x, c) => g.conv(x('x', [1, 3, 8, 8]), c([4, 3, 2, 2]), c([4]), { strides: [2, 2] }),
  Gather: (g, _, c) => g.gather(c([10, D]), g.input('ids', 'int64', [B, S]), 0),
  ScatterND: (g, x, c) => g.scatterND(g.reshape(x(), [-1, D]), g.constant('int64', [1, 1], [1]), c([1, D])),
  "ScatterND 'add'": (g, x, c) => g.scatterND(g.reshape(x(), [-1, D]), g.constant('int64', [1, 1], [1]), c([1, D]), 'add'),
  Where: (g, x) => g.where(g.input('m', 'bool', [B, S, D]), x(), 0),
  'Concat, Split, Transpose, Reshape': (g, x) => g.reshape(g.transpose(g.concat(g.split(x(), [8, 8], -1), 1), [0, 2, 1]), [-1, D]),
  ReduceSum: (g, x) => g.reduceSum(x(), [2]),
  SkipSimplifiedLayerNormalization: (g, x, c) => {
    const v = x();
    const out = { dtype: v.dtype, shape: [B, S, D] };
    return g.custom('SkipSimplifiedLayerNormalization', MS_DOMAIN, [v, x('skip'), c([D])], [out], { epsilon: { float: 1e-5 } })[0]!;
  },
};

type Outcome = 'native' | 'float32 (casts)' | 'no kernel' | 'fails at run';

/** Creates and runs the probe; 'float32 (casts)' when ORT inserted Cast nodes around it (its InsertCastTransformer). */
async function probe(op: string, dt: Half, dir: string): Promise<Outcome> {
  const g = new Graph({ name: op });
  const x = (name = 'x', shape = [B, S, D]) => g.cast(g.input(name, 'float32', shape), dt);
  const c = (shape: number[]) =>
    g.cast(
      g.constant(
        'float32',
        shape,
        randn(
          shape.reduce((a, b) => a * b, 1),
          7,
        ),
      ),
      dt,
    );
  g.output(g.cast(PROBES[op]!(g, x, c), 'float32'), 'out');
  const { bytes } = await serializeModel(g);
  const optimized = join(dir, `${dt}-${op.replace(/\W+/g, '_')}.onnx`);
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(bytes, {
      executionProviders: ['cpu'],
      logSeverityLevel: 4,
      optimizedModelFilePath: optimized,
    });
  } catch {
    return 'no kernel';
  }
  try {
    const feeds: Record<string, ort.Tensor> = {};
    for (const [i, name] of session.inputNames.entries()) {
      const dims = op === 'Conv' ? [1, 3, 8, 8] : name === 'ids' ? [B, S] : [B, S, D];
      const len = dims.reduce((a, b) => a * b, 1);
      feeds[name] =
        name === 'ids'
          ? new ort.Tensor(
              'int64',
              BigInt64Array.from({ length: len }, (_, k) => BigInt(k % 10)),
              dims,
            )
          : name === 'm'
            ? new ort.Tensor(
                'bool',
                Uint8Array.from({ length: len }, (_, k) => k % 2),
                dims,
              )
            : new ort.Tensor('float32', randn(len, i + 1), dims);
    }
    await session.run(feeds);
  } catch {
    return 'fails at run';
  } finally {
    await session.release();
  }
  return (await readFile(optimized)).toString('latin1').includes('InsertedPrecisionFreeCast') ? 'float32 (casts)' : 'native';
}

/** The README's 'Compute dtype' table: op -> [float16, bfloat16]. */
function readmeTable(): Map<string, [string, string]> {
  const md = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const section = md.slice(md.indexOf('<!-- cpu-kernels -->'), md.indexOf('<!-- /cpu-kernels -->'));
  const rows = new Map<string, [string, string]>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((s) => s.trim());
    if (cells.length !== 5 || cells[1] === 'op' || cells[1]!.startsWith('-')) continue;
    rows.set(cells[1]!.replace(/`/g, ''), [cells[2]!, cells[3]!]);
  }
  return rows;
}

describe('ORT 1.29 CPU EP kernels in 16-bit compute', () => {
  it("matches the README's table for every op the builders emit", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-kernels-'));
    dirs.push(dir);
    const measured = new Map<string, [string, string]>();
    for (const op of Object.keys(PROBES)) measured.set(op, [await probe(op, 'float16', dir), await probe(op, 'bfloat16', dir)]);
    if (process.env.KERNELS_PRINT) for (const [op, [a, b]] of measured) console.log(`| \`${op}\` | ${a} | ${b} |`);
    expect(readmeTable()).toEqual(measured);
  });
});

it('a quantized graph must compute in float32 (MatMulNBits weights are built for float32 activations)', () => {
  expect(() => applyPasses(new Graph({ computeDtype: 'float16' }), [quantizeLinearPass('int8')])).toThrow(
    /quantize needs computeDtype 'float32'/,
  );
  expect(applyPasses(new Graph(), [quantizeLinearPass('int8')])).toEqual({ 'quantize-linear': 0 });
});

describe('16-bit constants and emulateInFloat32', () => {
  it('numbers become 16-bit constants rounded to nearest even (as ORT Cast rounds them)', async () => {
    const values = [1 / 3, 65504, 70000, -2.5e-8, 1 + 2 ** -8, 1 + 3 * 2 ** -9];
    for (const dt of ['float16', 'bfloat16'] as const) {
      const g = new Graph();
      const y = g.input('y', 'float32', [values.length]);
      g.output(g.cast(g.constant(dt, [values.length], values), 'float32'), 'direct');
      g.output(g.cast(g.cast(g.add(y, g.constant('float32', [values.length], values)), dt), 'float32'), 'ort');
      const { bytes } = await serializeModel(g);
      const s = await ort.InferenceSession.create(bytes, { executionProviders: ['cpu'], logSeverityLevel: 4 });
      const r = await s.run({ y: new ort.Tensor('float32', new Float32Array(values.length), [values.length]) });
      await s.release();
      expect(r.direct!.data, dt).toEqual(r.ort!.data);
    }
  });

  it('a bfloat16 MatMul -> Add -> Softmax graph runs on float32 kernels, each result rounded to bfloat16', async () => {
    const [M, K, N] = [3, 40, 5];
    const round = (a: Float32Array) => bf16ToF32(f32ToBf16(a));
    const w = round(randn(K * N, 2));
    const g = new Graph({ computeDtype: 'bfloat16' });
    const x = g.cast(g.input('x', 'float32', [M, K]), 'bfloat16');
    const wv = g.cast(g.constant('float32', [K, N], w), 'bfloat16');
    const y = g.softmax(g.add(g.matmul(x, wv), 0.75), -1);
    g.output(g.cast(y, 'float32'), 'y');
    const { bytes } = await serializeModel(g);
    await expect(ort.InferenceSession.create(bytes, { executionProviders: ['cpu'], logSeverityLevel: 4 })).rejects.toThrow(
      /Could not find an implementation for (MatMul|Add|Softmax)/,
    );
    const s = await ort.InferenceSession.create(emulateInFloat32(bytes), { executionProviders: ['cpu'], logSeverityLevel: 4 });
    const xs = randn(M * K, 3);
    const out = (await s.run({ x: new ort.Tensor('float32', xs, [M, K]) })).y!.data as Float32Array;
    await s.release();
    // The same computation in JS: float64 sums rounded to bfloat16 after each op (the MatMul's float32 sum may
    // round differently from the float64 one only within a bfloat16 step: compare to one step).
    const xr = round(xs);
    const mm = new Float32Array(M * N);
    for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) for (let k = 0; k < K; k++) mm[i * N + j]! += xr[i * K + k]! * w[k * N + j]!;
    const added = round(round(mm).map((v) => v + 0.75));
    const expected = new Float32Array(M * N);
    for (let i = 0; i < M; i++) {
      const row = added.subarray(i * N, (i + 1) * N);
      const m = Math.max(...row);
      const e = row.map((v) => Math.exp(v - m));
      const sum = e.reduce((a, b) => a + b, 0);
      expected.set(round(e.map((v) => v / sum)), i * N);
    }
    for (let i = 0; i < out.length; i++) {
      expect(Math.abs(out[i]! - expected[i]!)).toBeLessThanOrEqual(2 ** -8 * Math.max(Math.abs(expected[i]!), 2 ** -20) * 2);
    }
    // Every output is a bfloat16 value (the emulation rounded it), and the graph outputs are float32.
    expect(Array.from(out)).toEqual(Array.from(round(out)));
  });

  it('a Loop carrying a bfloat16 value (body reads a root weight): rewritten inside, each body result rounded', async () => {
    const n = 6;
    const round = (a: Float32Array) => bf16ToF32(f32ToBf16(a));
    const w = round(randn(n, 4));
    const g = new Graph({ computeDtype: 'bfloat16' });
    const x0 = g.cast(g.input('x', 'float32', [n]), 'bfloat16');
    const wv = g.cast(g.constant('float32', [n], w), 'bfloat16');
    const r = g.loop({ trips: g.scalar(3, 'int64'), carried: [x0] }, (b, { cond, carried }) => {
      const next = b.add(b.mul(carried[0]!, wv), 0.3);
      return { cond, carried: [next], scans: [b.cast(next, 'float32')] };
    });
    g.output(g.cast(r.carried[0]!, 'float32'), 'y');
    g.output(r.scans[0]!, 'steps');
    const { bytes } = await serializeModel(g);
    const s = await ort.InferenceSession.create(emulateInFloat32(bytes), { executionProviders: ['cpu'], logSeverityLevel: 4 });
    const xs = randn(n, 5);
    const out = await s.run({ x: new ort.Tensor('float32', xs, [n]) });
    await s.release();
    // float32 ops, each result rounded to bfloat16 (0.3 is a bfloat16 constant).
    const c = round(Float32Array.of(0.3))[0]!;
    let x = round(xs);
    const steps: number[] = [];
    for (let t = 0; t < 3; t++) {
      const prod = round(x.map((v, i) => v * w[i]!));
      x = round(prod.map((v) => v + c));
      steps.push(...x);
    }
    expect(Array.from(out.y!.data as Float32Array)).toEqual(Array.from(x));
    expect(Array.from(out.steps!.data as Float32Array)).toEqual(steps);
  });
});
