import { f32ToBf16 } from '@vlmkit/safetensors';
import { describe, expect, it } from 'vitest';
import { Graph } from '../graph.js';
import * as nn from '../nn.js';
import { type QuantizeOptions, quantizeOptions } from '../quant.js';
import { quantizedRefs } from '../quant-ref.js';
import { tensorBytes } from '../tensor-bytes.js';
import { tensorFromArray } from '../tensor-ref.js';
import { type Feed, randn, runGraph } from '../test-utils/ort.js';
import type { Value } from '../value.js';
import { Weights } from '../weights.js';
import { quantizeLinearPass } from './quantize-linear.js';
import { applyPasses } from './rewrite.js';

// A decoder in small: an embedding table tied with the LM head (a Gemm with transB, as moe-decoder's `lmHead`
// writes it), two Linear layers (a bf16 weight with a bias, read through a Cast; a float32 one without), and a
// router written as the same x W^T but not by nn.linear: it must stay float.
const [B, S, D, H, E, V] = [2, 3, 64, 96, 8, 80];

function checkpoint(): Weights {
  const t = (shape: [number, number], seed: number) => tensorFromArray('float32', shape, randn(shape[0] * shape[1], seed));
  return Weights.from({
    'embed_tokens.weight': t([V, D], 1),
    'up.weight': tensorFromArray('bfloat16', [H, D], f32ToBf16(randn(H * D, 2))),
    'up.bias': tensorFromArray('bfloat16', [H], f32ToBf16(randn(H, 3))),
    'down.weight': t([D, H], 4),
    'router.weight': t([E, D], 5),
    'step.weight': t([D, D], 6),
  });
}

/**
 * The graph; `quantized` builds it as nn.linear did on a graph constructed with `quantize` (MatMulNBits on
 * `<weight>.quant` / `.scales` / `.zero_points` made at build time, the LM head on [B, S, D] directly): the
 * path this pass replaces, kept here as the reference.
 */
function build(w: Weights, quantized?: QuantizeOptions): Graph {
  const g = new Graph();
  const ids = g.input('ids', 'int64', [B, S]);
  const table = g.param(w, 'embed_tokens.weight', [V, D]);
  const linear = (x: Value, name: string, out: number, bias: boolean): Value => {
    if (quantized === undefined) return nn.linear(g, x, w, name, { out, bias });
    const packed = matmulNBits(g, w, `${name}.weight`, [out, x.dim(-1) as number], quantized);
    const b = bias ? g.param(w, `${name}.bias`, [out]) : undefined;
    return g.scope(name, () => {
      const y = packed(x);
      return b ? g.add(y, g.cast(b, 'float32')) : y;
    });
  };
  const x = g.gather(table, ids, 0);
  const y = linear(g.silu(linear(x, 'up', H, true)), 'down', D, false);
  const gate = g.param(w, 'router.weight', [E, D]);
  g.output(
    g.scope('router', () => g.matmul(y, g.transpose(gate, [1, 0]))),
    'router_logits',
  );
  const logits =
    quantized?.lmHead === true
      ? g.scope('lm_head', () => matmulNBits(g, w, 'embed_tokens.weight', [V, D], quantized)(y))
      : g.scope('lm_head', () => {
          const flat = g.mark(g.gemm(g.reshape(y, [-1, D]), table, undefined, { transB: true }), nn.LM_HEAD);
          return g.reshape(flat, g.concat([g.shapeOf(y, 0, 2), g.ints([V])], 0), [B, S, V]);
        });
  g.output(logits, 'logits');
  return g;
}

/** What `nn.quantizedWeight` was: the weight's MatMulNBits tensors made now, in the current scope. */
function matmulNBits(g: Graph, w: Weights, name: string, shape: [number, number], o: QuantizeOptions): (x: Value) => Value {
  const refs = quantizedRefs(g.paramRef(w, name, shape), o);
  const base = g.scoped(name);
  const packed = {
    b: g.initializer(`${base}.quant`, refs.b),
    scales: g.initializer(`${base}.scales`, refs.scales),
    zeroPoints: refs.zeroPoints && g.initializer(`${base}.zero_points`, refs.zeroPoints),
  };
  const [n, k] = shape;
  return (x) => g.matmulNBits(x, packed, { k, n, bits: o.bits, blockSize: o.blockSize, accuracyLevel: o.accuracyLevel });
}

const feeds: Record<string, Feed> = {
  ids: { dtype: 'int64', dims: [B, S], data: Array.from({ length: B * S }, (_, i) => (i * 37) % V) },
};

async function run(g: Graph): Promise<Record<string, Float32Array>> {
  const out = await runGraph(g, feeds);
  return Object.fromEntries(Object.entries(out).map(([k, t]) => [k, t.data as Float32Array]));
}

function relErr(a: Float32Array, b: Float32Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i]! - b[i]!) ** 2;
    den += b[i]! ** 2;
  }
  return Math.sqrt(num / den);
}

const modes: { name: string; o: QuantizeOptions; bound: number }[] = [
  // The bounds quant.test.ts holds ORT's MatMulNBits to against the float product.
  { name: 'int8, accuracy 0', o: quantizeOptions({ bits: 8, accuracyLevel: 0 }), bound: 1e-2 },
  { name: 'int8, accuracy 4', o: quantizeOptions('int8'), bound: 3e-2 },
  { name: 'int4, accuracy 4', o: quantizeOptions('int4'), bound: 0.15 },
  { name: 'int4 symmetric, no LM head', o: quantizeOptions({ bits: 4, symmetric: true, lmHead: false }), bound: 0.15 },
];

describe('quantizeLinearPass: marked MatMul / Gemm -> MatMulNBits', () => {
  for (const { name, o, bound } of modes) {
    it(`${name}: the outputs of the graph built quantized, bit for bit; within the quantization error of float`, async () => {
      const w = checkpoint();
      const float = await run(build(w));
      const g = build(w);
      expect(applyPasses(g, [quantizeLinearPass(o)])).toEqual({ 'quantize-linear': o.lmHead ? 3 : 2 });
      const got = await run(g);
      const reference = await run(build(w, o));
      expect(got.logits).toEqual(reference.logits);
      expect(got.router_logits).toEqual(reference.router_logits);
      expect(relErr(got.logits!, float.logits!)).toBeLessThan(bound);
    });
  }

  it('rewrites the marked nodes only and stores no float copy of a quantized weight', async () => {
    const w = checkpoint();
    const g = build(w);
    applyPasses(g, [quantizeLinearPass('int8')]);
    const { nodes, initializers } = g.snapshot();
    const ops = nodes.map((n) => n.opType);
    expect(ops.filter((op) => op === 'MatMulNBits')).toHaveLength(3);
    expect(ops.filter((op) => op === 'MatMul')).toHaveLength(1); // the router
    expect(ops).not.toContain('Gemm');
    expect(ops.filter((op) => op === 'Transpose')).toHaveLength(1); // the router's
    const names = initializers.map((e) => e.name);
    expect(names).not.toContain('up.weight');
    expect(names).not.toContain('down.weight');
    for (const t of ['up.weight', 'down.weight', 'embed_tokens.weight']) {
      expect(names).toEqual(expect.arrayContaining([`${t}.quant`, `${t}.scales`, `${t}.zero_points`]));
    }
    // Still read: the tied table by the embedding lookup, the router's weight by the router.
    expect(names).toEqual(expect.arrayContaining(['embed_tokens.weight', 'router.weight', 'up.bias']));
    // The node names are the ones the quantized build gave.
    expect(nodes.filter((n) => n.opType === 'MatMulNBits').map((n) => n.name)).toEqual([
      'up.MatMulNBits',
      'down.MatMulNBits',
      'lm_head.MatMulNBits',
    ]);
  });

  it('writes the tensors of the graph built quantized, in its order, with the same bytes', async () => {
    const w = checkpoint();
    const o = quantizeOptions({ bits: 4, lmHead: false });
    const g = build(w);
    applyPasses(g, [quantizeLinearPass(o)]);
    const reference = build(w, o).snapshot().initializers;
    const got = g.snapshot().initializers;
    expect(got.map((e) => e.name)).toEqual(reference.map((e) => e.name));
    for (const [i, e] of got.entries()) expect(await tensorBytes(e.ref), e.name).toEqual(await tensorBytes(reference[i]!.ref));
  });

  it('quantizes a Linear inside a Loop body, its float weight dropped from the model', async () => {
    const w = checkpoint();
    const g = new Graph();
    const x0 = g.input('x', 'float32', [B, D]);
    const trips = g.constant('int64', [], [2]);
    const [y] = g.loop({ trips, carried: [x0] }, (b, { cond, carried }) => ({
      cond,
      carried: [b.add(carried[0]!, nn.linear(b, carried[0]!, w, 'step', { out: D, bias: false }))],
    })).carried;
    g.output(y!, 'y');
    applyPasses(g, [quantizeLinearPass('int8')]);
    expect(g.snapshot().initializers.map((e) => e.name)).toEqual([
      'const.int64.0',
      'step.weight.quant',
      'step.weight.scales',
      'step.weight.zero_points',
    ]);
    const body = g
      .snapshot()
      .nodes.find((n) => n.opType === 'Loop')!
      .attribute![0]!.g!.node!.map((n) => n.opType);
    expect(body).toContain('MatMulNBits');
    expect(body).not.toContain('MatMul');
  });

  it('quantizes an LM head whose weight Cast was made long before it (a bf16 tied table)', async () => {
    const g = new Graph();
    const ids = g.input('ids', 'int64', [B, S]);
    const w = Weights.from({ 'embed_tokens.weight': tensorFromArray('bfloat16', [V, D], f32ToBf16(randn(V * D, 7))) });
    const table = g.param(w, 'embed_tokens.weight', [V, D]);
    // The head's float32 copy is made first, the lookup reads the table itself: the Cast stands far before the Gemm.
    const head = g.cast(table, 'float32');
    const y = g.relu(g.cast(g.gather(table, ids, 0), 'float32'));
    g.output(g.mark(g.gemm(g.reshape(y, [-1, D]), head, undefined, { transB: true }), nn.LM_HEAD), 'logits');
    expect(applyPasses(g, [quantizeLinearPass({ bits: 8, lmHead: true })])).toEqual({ 'quantize-linear': 1 });
    expect(g.nodes.map((n) => n.opType)).not.toContain('Gemm');
    const out = await runGraph(g, { ids: { dtype: 'int64', dims: [B, S], data: Array.from({ length: B * S }, (_, i) => i % V) } });
    expect(out.logits!.dims).toEqual([B * S, V]);
  });

  it('leaves a graph without marked nodes as built', () => {
    const w = checkpoint();
    const g = new Graph();
    const x = g.input('x', 'float32', [B, D]);
    g.output(g.matmul(x, g.transpose(g.param(w, 'router.weight', [E, D]), [1, 0])), 'y');
    const before = JSON.stringify(g.snapshot().nodes);
    expect(applyPasses(g, [quantizeLinearPass('int4')])).toEqual({ 'quantize-linear': 0 });
    expect(JSON.stringify(g.snapshot().nodes)).toBe(before);
    expect(g.snapshot().initializers.map((e) => e.name)).toEqual(['router.weight']);
  });
});
