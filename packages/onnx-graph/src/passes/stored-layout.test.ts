import { f32ToBf16 } from '@vlmkit/safetensors';
import { describe, expect, it } from 'vitest';
import { Graph } from '../graph.js';
import * as nn from '../nn.js';
import { everyNode } from '../nodes.js';
import { tensorFromArray } from '../tensor-ref.js';
import { passDiffs, randn } from '../test-utils/ort.js';
import { Weights } from '../weights.js';
import { applyPasses } from './rewrite.js';
import { storedLayoutCastPass, storedLayoutPass } from './stored-layout.js';

const [D, H] = [64, 96];

// Two Linear layers: a float32 weight with a bias (rewritten) and a bf16 one read through a Cast (left as is).
function build(rows: number): Graph {
  const w = Weights.from({
    'up.weight': tensorFromArray('float32', [H, D], randn(H * D, 1)),
    'up.bias': tensorFromArray('float32', [H], randn(H, 2)),
    'down.weight': tensorFromArray('bfloat16', [D, H], f32ToBf16(randn(D * H, 3))),
  });
  const g = new Graph();
  const x = g.input('x', 'float32', [1, rows, D]);
  g.output(nn.linear(g, nn.linear(g, x, w, 'up', { out: H }), w, 'down', { out: D, bias: false }), 'y');
  return g;
}

const feeds = (rows: number) => ({ x: { dtype: 'float32' as const, dims: [1, rows, D], data: randn(rows * D, 7) } });

describe('stored-layout pass', () => {
  it('a float32 Linear reads its weight as stored (FusedMatMul transB), no Transpose left; a Cast weight is left', () => {
    const g = build(5);
    expect(applyPasses(g, [storedLayoutPass])).toEqual({ 'stored-layout': 1 });
    const nodes = [...everyNode(g.snapshot().nodes)];
    const fused = nodes.filter((n) => n.opType === 'FusedMatMul');
    expect(fused.map((n) => [n.input, n.attribute?.map((a) => [a.name, Number(a.i)])])).toEqual([[['x', 'up.weight'], [['transB', 1]]]]);
    expect(nodes.filter((n) => n.opType === 'Transpose').map((n) => n.input?.[0])).toEqual([
      nodes.find((n) => n.opType === 'Cast')!.output![0],
    ]);
  });

  it('many rows: the same bits as the MatMul on the transposed weight; one row (a decode step): within 1e-5 relative', async () => {
    for (const rows of [5, 64]) {
      const { rewrites, diffs } = await passDiffs(() => build(rows), [storedLayoutPass], feeds(rows));
      expect(rewrites).toEqual({ 'stored-layout': 1 });
      expect(diffs.y).toBe(0);
    }
    const { diffs } = await passDiffs(() => build(1), [storedLayoutPass], feeds(1));
    // y is about 100 in magnitude.
    expect(diffs.y).toBeLessThan(1e-3);
  });

  it('stored-layout-cast: the bf16 weight too (FusedMatMul on its Cast, no Transpose left); same bits for many rows', async () => {
    const g = build(5);
    expect(applyPasses(g, [storedLayoutCastPass])).toEqual({ 'stored-layout-cast': 2 });
    const nodes = [...everyNode(g.snapshot().nodes)];
    const cast = nodes.find((n) => n.opType === 'Cast')!;
    expect(nodes.filter((n) => n.opType === 'Transpose')).toEqual([]);
    expect(nodes.filter((n) => n.opType === 'FusedMatMul').map((n) => n.input?.[1])).toEqual(['up.weight', cast.output![0]]);
    for (const rows of [5, 64]) {
      const { rewrites, diffs } = await passDiffs(() => build(rows), [storedLayoutCastPass], feeds(rows));
      expect(rewrites).toEqual({ 'stored-layout-cast': 2 });
      expect(diffs.y).toBe(0);
    }
  });
});
