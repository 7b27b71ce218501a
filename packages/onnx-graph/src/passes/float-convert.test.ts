// floatConvertPass: a float32 graph (linear, RMSNorm, SiLU, LayerNorm, a float32 router region, a mask bias, a
// Loop and an If, a KV-like input and output) converted to float16 / bfloat16 gives bit for bit what the same
// model written directly in 16 bits with torch's rounding points gives (the casts the builders wrote by hand
// before the pass existed), and the float32 graph's numbers within 16-bit rounding.
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { floatData } from '../dtype.js';
import { emulateInFloat32 } from '../emulate.js';
import { Graph } from '../graph.js';
import { serializeModel } from '../model.js';
import { layerNorm, linear, maskToBias, rmsNorm } from '../nn.js';
import { onnx } from '../proto.js';
import { type TensorRef, tensorFromArray } from '../tensor-ref.js';
import { randn } from '../test-utils/ort.js';
import type { Value } from '../value.js';
import { Weights } from '../weights.js';
import { COMPUTE_DTYPE_IO, floatConvertPass } from './float-convert.js';
import { applyPasses } from './rewrite.js';

type Half = 'float16' | 'bfloat16';
const [B, S, D, E] = [2, 5, 16, 4];

/** A bf16 checkpoint's weights (the 16-bit graphs use them as stored, float32 ones widen them). */
function checkpoint(): Weights {
  const t = (shape: number[], seed: number, scale = 0.3, offset = 0): TensorRef =>
    tensorFromArray(
      'bfloat16',
      shape,
      floatData(
        'bfloat16',
        randn(
          shape.reduce((a, b) => a * b, 1),
          seed,
        ).map((v) => offset + scale * v),
      ),
    );
  return Weights.from({
    'fc.weight': t([D, D], 1),
    'fc.bias': t([D], 2),
    'rms.weight': t([D], 3, 0.1, 1),
    'ln.weight': t([D], 4, 0.1, 1),
    'ln.bias': t([D], 5, 0.1),
    'gate.weight': t([E, D], 6),
  });
}

/**
 * The model, written once. `half`: written directly in that type as the builders did by hand (norms, SiLU
 * and the router in float32 inside, the KV-like I/O in `kv`); undefined: in float32, for the pass.
 */
function model(half?: Half): Graph {
  const g = new Graph({ name: 'm' });
  const w = checkpoint();
  const dt = half ?? 'float32';
  const kv = half === 'float16' ? 'float16' : 'float32';
  const as = (v: Value, to: Value['dtype']) => g.cast(v, to);
  const x = as(g.input('x', 'float32', [B, S, D]), dt);
  const pastIn = g.input('past', kv, [B, S, D]);
  if (!half) g.mark(pastIn, COMPUTE_DTYPE_IO);
  const past = as(pastIn, dt);
  const mask = g.input('mask', 'bool', [B, S, D]);
  const a = half ? halfLinear(g, x, w, half) : linear(g, x, w, 'fc', { out: D });
  const n = half ? halfRms(g, a, w, half) : rmsNorm(g, a, w, 'rms', 1e-6);
  const s = half ? as(g.silu(as(n, 'float32')), dt) : g.silu(n);
  const l = half ? halfLayerNorm(g, s, w, half) : layerNorm(g, s, w, 'ln', 1e-5);
  const route = () => {
    const gate = g.cast(g.param(w, 'gate.weight', [E, D]), 'float32');
    const probs = g.softmax(g.matmul(as(l, 'float32'), g.transpose(gate, [1, 0])), -1);
    return g.reduceMax(probs, [2]);
  };
  const weight = as(half ? route() : g.inFloat32(route), dt);
  const biased = g.add(g.add(g.mul(l, weight), past), maskToBias(g, mask, dt));
  // A float32 table (a rotary table's role) carried through the Loop and updated in float32.
  const table = g.input('table', 'float32', [D]);
  const [looped, tableOut] = g.loop({ trips: g.scalar(2, 'int64'), carried: [biased, table] }, (b, { cond, carried }) => ({
    cond,
    carried: [b.add(b.mul(carried[0]!, half ? b.scalar(0.5, dt) : 0.5), l), b.inFloat32(() => b.add(b.mul(carried[1]!, 1 / 3), 0.1))],
  })).carried;
  g.output(tableOut!, 'table_out');
  const any = g.cast(g.reduceMax(g.cast(g.reshape(mask, [-1]), 'int32'), [0], false), 'bool');
  const [y] = g.if(
    any,
    (b) => [b.mul(looped!, 3)],
    () => [looped!],
  );
  g.output(as(y!, 'float32'), 'y');
  const present = g.output(as(g.add(past, a), kv), 'present');
  if (!half) g.mark(present, COMPUTE_DTYPE_IO);
  return g;
}

function halfLinear(g: Graph, x: Value, w: Weights, dt: Half): Value {
  const weight = g.cast(g.param(w, 'fc.weight', [D, D]), dt);
  const bias = g.cast(g.param(w, 'fc.bias', [D]), dt);
  return g.add(g.matmul(x, g.transpose(weight, [1, 0])), bias);
}

function halfRms(g: Graph, x: Value, w: Weights, dt: Half): Value {
  const weight = g.cast(g.param(w, 'rms.weight', [D]), dt);
  const ones = g.constant('float32', [D], new Float32Array(D).fill(1));
  return g.mul(g.cast(g.rmsNorm(g.cast(x, 'float32'), ones, 1e-6), dt), weight);
}

function halfLayerNorm(g: Graph, x: Value, w: Weights, dt: Half): Value {
  const [weight, bias] = ['ln.weight', 'ln.bias'].map((n) => g.cast(g.param(w, n, [D]), 'float32'));
  return g.cast(g.layerNorm(g.cast(x, 'float32'), weight!, bias!, 1e-5), dt);
}

async function run(g: Graph, half: Half | undefined): Promise<Record<string, Float32Array>> {
  const { bytes } = await serializeModel(g);
  const model = half === 'bfloat16' ? emulateInFloat32(bytes) : bytes;
  const s = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], logSeverityLevel: 4 });
  const n = B * S * D;
  const past = randn(n, 12);
  const feeds = {
    x: new ort.Tensor('float32', randn(n, 11), [B, S, D]),
    past:
      half === 'float16' ? new ort.Tensor('float16', floatData('float16', past), [B, S, D]) : new ort.Tensor('float32', past, [B, S, D]),
    table: new ort.Tensor('float32', randn(D, 13), [D]),
    mask: new ort.Tensor(
      'bool',
      Uint8Array.from({ length: n }, (_, i) => (i % 7 === 3 ? 0 : 1)),
      [B, S, D],
    ),
  };
  const r = await s.run(feeds);
  await s.release();
  const f32 = (t: ort.Tensor) => (t.type === 'float16' ? Float32Array.from(t.data as Uint16Array, halfToNumber) : (t.data as Float32Array));
  return { y: f32(r.y!), present: f32(r.present!), table: f32(r.table_out!) };
}

function halfToNumber(h: number): number {
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  const v = e === 0 ? m * 2 ** -24 : e === 31 ? (m ? Number.NaN : Number.POSITIVE_INFINITY) : (1 + m / 1024) * 2 ** (e - 15);
  return h & 0x8000 ? -v : v;
}

function converted(half: Half): Graph {
  const g = model();
  applyPasses(g, [floatConvertPass(half)]);
  return g;
}

describe.each(['float16', 'bfloat16'] as const)('floatConvertPass(%s)', (half) => {
  it('gives bit for bit the graph written directly in 16 bits', async () => {
    const direct = await run(model(half), half);
    const after = await run(converted(half), half);
    expect(Array.from(after.y!)).toEqual(Array.from(direct.y!));
    expect(Array.from(after.present!)).toEqual(Array.from(direct.present!));
  });

  it("is within 16-bit rounding of the float32 graph's numbers; a float32 Loop-carried value exactly", async () => {
    const f32 = await run(model(), undefined);
    const after = await run(converted(half), half);
    expect(Array.from(after.table!)).toEqual(Array.from(f32.table!));
    const step = half === 'float16' ? 2 ** -10 : 2 ** -7;
    let worst = 0;
    for (let i = 0; i < f32.y!.length; i++) {
      // Masked positions hold the bias (-1e9 in float32, saturated in float16).
      if (Math.abs(f32.y![i]!) > 1e4) continue;
      worst = Math.max(worst, Math.abs(after.y![i]! - f32.y![i]!) / Math.max(1, Math.abs(f32.y![i]!)));
    }
    console.log(`[float-convert] ${half}: max |diff| / max(1, |y|) ${worst}`);
    // A few roundings along the way (linear, norms, the loop's adds): within 16 of the type's steps.
    expect(worst).toBeLessThan(16 * step);
  });

  it('types: float32 I/O but the marked KV-like pair, 16-bit weights and activations, float32 norms and router', () => {
    const g = converted(half);
    const io = Object.fromEntries([...g.snapshot().inputs, ...g.snapshot().outputs].map((v) => [v.name, v.dtype]));
    const kv = half === 'float16' ? 'float16' : 'float32';
    expect(io).toEqual({ x: 'float32', past: kv, mask: 'bool', table: 'float32', y: 'float32', table_out: 'float32', present: kv });
    expect(g.computeDtype).toBe(half);
    const typeOfOp = (op: string) => g.nodes.filter((n) => n.opType === op).map((n) => g.typeOf(n.output![0]!)!.dtype);
    expect(typeOfOp('MatMul')).toEqual([half, 'float32']);
    expect(typeOfOp('LayerNormalization')).toEqual(['float32']);
    expect(typeOfOp('RMSNormalization')).toEqual(['float32']);
    expect(typeOfOp('Softmax')).toEqual(['float32']);
    expect(() => applyPasses(g, [floatConvertPass(half)])).toThrow(/computes in/);
  });
});

it('emulateInFloat32 widens a bfloat16 attribute tensor of a model read from a file (a Node Buffer)', async () => {
  const g = new Graph();
  const shape = g.input('shape', 'int64', [2]);
  g.output(g.cast(g.constantOfShape(shape, 0.75, 'float32'), 'float32'), 'y');
  applyPasses(g, [floatConvertPass('bfloat16')]);
  const { bytes } = await serializeModel(g);
  const attr = onnx.ModelProto.decode(bytes).graph!.node!.find((n) => n.opType === 'ConstantOfShape')!.attribute![0]!;
  expect(attr.t!.dataType).toBe(onnx.TensorProto.DataType.BFLOAT16);
  // Bytes as readFile gives them: protobufjs decodes them into views of one shared Buffer.
  const padded = Buffer.concat([Buffer.alloc(64, 0x5a), Buffer.from(bytes)]).subarray(64);
  const s = await ort.InferenceSession.create(emulateInFloat32(padded), { executionProviders: ['cpu'], logSeverityLevel: 4 });
  const r = await s.run({ shape: new ort.Tensor('int64', BigInt64Array.of(2n, 3n), [2]) });
  await s.release();
  expect(Array.from(r.y!.data as Float32Array)).toEqual(new Array(6).fill(0.75));
});
