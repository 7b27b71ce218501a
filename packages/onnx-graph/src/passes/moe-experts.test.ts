import { describe, expect, it } from 'vitest';
import { Graph } from '../graph.js';
import * as nn from '../nn.js';
import { tensorFromArray } from '../tensor-ref.js';
import { type Feed, maxAbsDiff, passDiffs, randn, runGraph } from '../test-utils/ort.js';
import type { Value } from '../value.js';
import { Weights } from '../weights.js';
import { markRoutedExperts, moeExpertsPass, qmoeExpertsPass, WIDE_MOE_EXPERTS, wideMoeExpertsPass } from './moe-experts.js';
import { quantizeLinearPass } from './quantize-linear.js';
import { applyPasses } from './rewrite.js';

// Routed experts in their plain math form: a router choosing k of E experts by softmax + bias (as ERNIE's),
// weights renormalized over the chosen, every expert run on every token and weighted (zero when not chosen),
// rows outside the modality zero.
const [N, D, DEFAULT_E, k] = [7, 64, 4, 2];

/** `I`: the experts' intermediate size (default 64: two blocks of 32 per down row); `E`: how many experts. */
function checkpoint(I = 64, E = DEFAULT_E): Weights {
  const t = (shape: number[], seed: number, scale = 1 / Math.sqrt(shape[shape.length - 1]!)) =>
    tensorFromArray(
      'float32',
      shape,
      randn(
        shape.reduce((a, b) => a * b, 1),
        seed,
      ).map((v) => v * scale),
    );
  const w: Record<string, ReturnType<typeof t>> = { 'gate.weight': t([E, D], 1), bias: t([E], 2, 0.2) };
  for (let e = 0; e < E; e++) {
    w[`${e}.gate_proj.weight`] = t([I, D], 10 + e);
    w[`${e}.up_proj.weight`] = t([I, D], 20 + e);
    w[`${e}.down_proj.weight`] = t([D, I], 30 + e);
  }
  return Weights.from(w);
}

/** `alsoReturn`: a value of the region the graph returns too. */
function build(w: Weights, alsoReturn?: 'gate' | 'topk_ids'): Graph {
  const g = new Graph();
  const x = g.input('x', 'float32', [N, D]);
  const inModality = g.cast(g.input('in_modality', 'int64', [N, 1]), 'bool');
  const r = g.scope('experts', () => routedExperts(g, w, x, inModality));
  g.output(r.out, 'y');
  if (alsoReturn === 'gate') g.output(r.gate, 'gate');
  if (alsoReturn === 'topk_ids') g.output(r.topkIds, 'topk_ids');
  return g;
}

function routedExperts(g: Graph, w: Weights, x: Value, inModality: Value): { out: Value; gate: Value; topkIds: Value } {
  const E = w.read('gate.weight', undefined).shape[0]!;
  const routerLogits = g.matmul(x, g.transpose(g.param(w, 'gate.weight', [E, D]), [1, 0]));
  const probs = g.softmax(routerLogits, -1);
  const [, topkIds] = g.topk(g.add(probs, g.param(w, 'bias', [E])), k, -1);
  const picked = g.gatherElements(probs, topkIds, 1);
  const weights = g.div(picked, g.reduceSum(picked, [1]));
  const I = w.read('0.gate_proj.weight', undefined).shape[0]!;
  const experts: { gate: Value; up: Value; down: Value }[] = [];
  let sum: Value | undefined;
  for (let e = 0; e < E; e++) {
    const ew = w.sub(`${e}`);
    const { gate, up, down } = g.scope(`${e}`, () => {
      const gate = nn.linear(g, x, ew, 'gate_proj', { bias: false, out: I });
      const up = nn.linear(g, x, ew, 'up_proj', { bias: false, out: I });
      return { gate, up, down: nn.linear(g, g.mul(g.silu(gate), up), ew, 'down_proj', { bias: false, out: D }) };
    });
    experts.push({ gate, up, down });
    const mine = g.reduceSum(g.mul(g.cast(g.equal(topkIds, g.constant('int64', [], [e])), 'float32'), weights), [1]); // [N, 1]
    const y = g.mul(down, mine);
    sum = sum === undefined ? y : g.add(sum, y);
  }
  const out = g.where(inModality, sum!, g.scalar(0, 'float32'));
  markRoutedExperts(g, out, { tokens: x, inModality, routerLogits, topkIds, experts });
  return { out, gate: experts[0]!.gate, topkIds };
}

const feeds: Record<string, Feed> = {
  x: { dtype: 'float32', dims: [N, D], data: randn(N * D, 3) },
  in_modality: { dtype: 'int64', dims: [N, 1], data: [1, 0, 1, 1, 0, 1, 1] },
};

describe('moeExpertsPass / qmoeExpertsPass: routed experts -> com.microsoft MoE / QMoE', () => {
  it('float weights: one MoE with the same numbers, and nothing of the region left', async () => {
    const w = checkpoint();
    const { rewrites, diffs } = await passDiffs(() => build(w), [moeExpertsPass], feeds);
    expect(rewrites).toEqual({ 'moe-experts': 1 });
    expect(diffs.y).toBeLessThan(2e-6);
    const g = build(w);
    applyPasses(g, [moeExpertsPass]);
    const ops = g.nodes.map((n) => n.opType);
    expect(ops.filter((o) => o === 'MoE')).toHaveLength(1);
    // The router's MatMul and top-k stay; the experts' MatMuls, the weights' Div and the masking Where go.
    expect(ops.filter((o) => o === 'MatMul')).toHaveLength(1);
    expect(ops).not.toContain('Div');
    expect(g.nodes.some((n) => n.opType === 'Where' && n.name?.startsWith('experts.Where'))).toBe(false);
    const initializers = g.snapshot().initializers.map((t) => t.name);
    expect(initializers.filter((n) => /\d\.(gate|up|down)_proj\.weight$/.test(n))).toEqual([]);
    expect(initializers).toEqual(expect.arrayContaining(['experts.experts.fc1', 'experts.experts.fc2']));
  });

  it('keeps what the graph still reads: a region value returned stays, or the rewrite is refused', async () => {
    const w = checkpoint();
    // The chosen ids returned too: the router stays whole, the experts still go.
    const { rewrites, diffs } = await passDiffs(() => build(w, 'topk_ids'), [moeExpertsPass], feeds);
    expect(rewrites).toEqual({ 'moe-experts': 1 });
    expect(diffs.topk_ids).toBe(0);
    expect(diffs.y).toBeLessThan(2e-6);
    // An expert's own Linear returned: that MatMul stays (and only it of the experts).
    const again = await passDiffs(() => build(w, 'gate'), [moeExpertsPass], feeds);
    expect(again.rewrites).toEqual({ 'moe-experts': 1 });
    expect(again.diffs.gate).toBe(0);
    const g = build(w, 'gate');
    applyPasses(g, [moeExpertsPass]);
    expect(g.nodes.filter((n) => n.opType === 'MatMul').map((n) => n.name)).toEqual(['experts.MatMul', 'experts.0.gate_proj.MatMul']);
  });

  it('quantized Linears: QMoE on the same blocks gives what their MatMulNBits give (int4 and int8, with and without zero points)', async () => {
    const w = checkpoint();
    for (const [bits, symmetric] of [
      [4, false],
      [4, true],
      [8, false],
    ] as const) {
      // accuracy_level 0: MatMulNBits computes in float32, as QMoE's CPU kernel does. One pass per graph.
      const quantize = () => quantizeLinearPass({ bits, blockSize: 32, accuracyLevel: 0, symmetric });
      const sparse = build(w);
      applyPasses(sparse, [quantize()]);
      const fused = build(w);
      expect(applyPasses(fused, [quantize(), moeExpertsPass, qmoeExpertsPass])).toEqual({
        'quantize-linear': 3 * DEFAULT_E,
        'moe-experts': 0,
        'qmoe-experts': 1,
      });
      expect(fused.nodes.map((n) => n.opType)).not.toContain('MatMulNBits');
      expect(fused.nodes.filter((n) => n.opType === 'QMoE')).toHaveLength(1);
      const [a, b, float] = await Promise.all([runGraph(sparse, feeds), runGraph(fused, feeds), runGraph(build(w), feeds)]);
      const [ya, yb, yf] = [a, b, float].map((o) => o.y!.data as Float32Array);
      // The same blocks both ways; the quantization error itself is far larger.
      expect(maxAbsDiff(ya!, yb!), `${bits}-bit symmetric ${symmetric}`).toBeLessThan(2e-6);
      expect(maxAbsDiff(yb!, yf!)).toBeGreaterThan(1e-4);
      expect(maxAbsDiff(yb!, yf!)).toBeLessThan(bits === 4 ? 0.5 : 0.05);
    }
  });

  it('leaves 4-bit experts with zero points and one block per row as MatMulNBits (ORT 1.29 reads them wrong)', () => {
    const g = build(checkpoint(32));
    expect(applyPasses(g, [quantizeLinearPass({ bits: 4, blockSize: 32 }), qmoeExpertsPass])).toEqual({
      'quantize-linear': 3 * DEFAULT_E,
      'qmoe-experts': 0,
    });
  });

  it("'moe-experts-wide' rewrites a region of WIDE_MOE_EXPERTS experts or more and leaves a narrower one", async () => {
    const narrow = checkpoint(64, WIDE_MOE_EXPERTS - 1);
    const g = build(narrow);
    expect(applyPasses(g, [wideMoeExpertsPass])).toEqual({ 'moe-experts-wide': 0 });
    expect(g.nodes.map((n) => n.opType)).not.toContain('MoE');
    // The narrow region stays marked: the unconditional pass still takes it.
    expect(applyPasses(g, [moeExpertsPass])).toEqual({ 'moe-experts': 1 });
    const wide = checkpoint(64, WIDE_MOE_EXPERTS);
    const { rewrites, diffs } = await passDiffs(() => build(wide), [wideMoeExpertsPass], feeds);
    expect(rewrites).toEqual({ 'moe-experts-wide': 1 });
    expect(diffs.y).toBeLessThan(2e-6);
  });
});
