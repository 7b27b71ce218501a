// onnx-graph's expert-groups pass on the grouped experts this package builds: the same result bit for bit,
// float32 and int4, for a decode step (one token, most groups skipped) and a prompt (every group taken).
import {
  applyPasses,
  EXPERTS_PER_IF,
  everyNode,
  expertGateUpPass,
  expertGroupsPass,
  Graph,
  markRoutedExperts,
  quantizeLinearPass,
  tensorFromArray,
  Weights,
} from '@vlmkit/onnx-graph';
import { describe, expect, it } from 'vitest';
import { f32, randn, run, sessionFor } from '../test-utils/ort.js';
import { groupedExperts } from './grouped-experts.js';

const [E, K, D, I] = [4 * EXPERTS_PER_IF, 2, 64, 32];
const FEW = 3 * EXPERTS_PER_IF;

function weights(E: number): Weights {
  const t = (shape: number[], seed: number) => tensorFromArray('float32', shape, randn(shape[0]! * shape[1]!, seed, 0.2));
  const w: Record<string, ReturnType<typeof t>> = { 'gate.weight': t([E, D], 1) };
  for (let e = 0; e < E; e++) {
    w[`${e}.gate_proj.weight`] = t([I, D], 100 + e);
    w[`${e}.up_proj.weight`] = t([I, D], 200 + e);
    w[`${e}.down_proj.weight`] = t([D, I], 300 + e);
  }
  return Weights.from(w);
}

/** Qwen3-MoE's routing (softmax, top-k, renormalized) into the grouped experts over x [N, D]. */
function build(w: Weights, quantize: boolean, grouped: boolean, E = w.read('gate.weight', undefined).shape[0]!, gateUp = false): Graph {
  const g = new Graph();
  const x = g.input('x', 'float32', ['n', D]);
  const routerLogits = g.matmul(x, g.transpose(g.param(w, 'gate.weight', [E, D]), [1, 0]));
  const [picked, topkIds] = g.topk(g.softmax(routerLogits, -1), K, -1);
  const topkWeights = g.div(picked, g.reduceSum(picked, [1]));
  const inModality = g.cast(g.unsqueeze(g.constantOfShape(g.shapeOf(x, 0, 1), 1, 'int64', [x.dim(0)]), [1]), 'bool');
  const r = g.scope('experts', () => {
    const experts = groupedExperts(
      g,
      w,
      { numExperts: E, intermediateSize: I, hiddenSize: D },
      { tokens: x, topkIds, topkWeights, inModality },
    );
    return markRoutedExperts(g, experts.out, { tokens: x, inModality, routerLogits, topkIds, experts: experts.linears });
  });
  g.output(r, 'y');
  if (quantize) applyPasses(g, [quantizeLinearPass('int4')]);
  if (gateUp) expect(applyPasses(g, [expertGateUpPass])).toEqual({ 'expert-gate-up': quantize ? E : 0 });
  if (grouped) expect(applyPasses(g, [expertGroupsPass])).toEqual({ 'expert-groups': E >= 4 * EXPERTS_PER_IF ? 1 : 0 });
  return g;
}

describe('expert-groups pass on groupedExperts', () => {
  const w = weights(E);
  for (const quantize of [false, true]) {
    it(`${quantize ? 'int4' : 'float32'}: ${E / EXPERTS_PER_IF} Ifs, the same output for one token and for a prompt`, async () => {
      const plain = await sessionFor(build(w, quantize, false));
      const g = build(w, quantize, true);
      const nodes = g.snapshot().nodes;
      expect(nodes.filter((n) => n.opType === 'If')).toHaveLength(E / EXPERTS_PER_IF);
      // Every expert's Linears moved into the branches.
      const outer = nodes.filter((n) => n.opType === 'MatMul' || n.opType === 'MatMulNBits');
      expect(outer).toHaveLength(1); // the router
      expect([...everyNode(nodes)].filter((n) => n.opType === (quantize ? 'MatMulNBits' : 'MatMul'))).toHaveLength(
        3 * E + (quantize ? 0 : 1),
      );
      const groupedSession = await sessionFor(g);
      for (const n of [1, 9]) {
        const feeds = { x: f32([n, D], randn(n * D, 7 + n)) };
        const [a, b] = [await run(plain, feeds), await run(groupedSession, feeds)];
        expect(Array.from(b.y!.data as Float32Array)).toEqual(Array.from(a.y!.data as Float32Array));
      }
    });
  }

  it('leaves a region of fewer than four groups as it is', () => {
    const g = build(weights(FEW), false, true);
    expect(g.snapshot().nodes.filter((n) => n.opType === 'If')).toHaveLength(0);
  });

  // onnx-graph's expert-gate-up pass before it: each expert's gate and up MatMulNBits in one, the same bits.
  it('int4 with expert-gate-up: one MatMulNBits per expert for gate and up, the same output; float32 left alone', async () => {
    const plain = await sessionFor(build(w, true, false));
    const g = build(w, true, true, E, true);
    const nbits = [...everyNode(g.snapshot().nodes)].filter((n) => n.opType === 'MatMulNBits');
    expect(nbits).toHaveLength(2 * E);
    const attr = (n: (typeof nbits)[number], name: string) => Number(n.attribute?.find((a) => a.name === name)?.i);
    expect(nbits.filter((n) => attr(n, 'K') === D && attr(n, 'N') === 2 * I)).toHaveLength(E);
    const fused = await sessionFor(g);
    for (const n of [1, 9]) {
      const feeds = { x: f32([n, D], randn(n * D, 7 + n)) };
      const [a, b] = [await run(plain, feeds), await run(fused, feeds)];
      expect(Array.from(b.y!.data as Float32Array)).toEqual(Array.from(a.y!.data as Float32Array));
    }
    build(w, false, false, E, true);
  });
});
