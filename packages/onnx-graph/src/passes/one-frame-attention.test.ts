import { describe, expect, it } from 'vitest';
import { Graph } from '../graph.js';
import { maskToBias } from '../nn.js';
import { everyNode } from '../nodes.js';
import { passDiffs, randn } from '../test-utils/ort.js';
import { markFrameBias, oneFrameAttentionPass } from './one-frame-attention.js';
import { applyPasses } from './rewrite.js';

const [N, H, HD] = [12, 2, 8];

/** Two layers of MultiHeadAttention over x [1, N, H*HD] with the block-diagonal bias of per-patch frame ids. */
function tower(): Graph {
  const g = new Graph();
  const x = g.input('x', 'float32', [1, N, H * HD]);
  const seg = g.input('seg', 'int64', [N]);
  const same = g.equal(g.unsqueeze(seg, [1]), g.unsqueeze(seg, [0]));
  const bias = markFrameBias(g, maskToBias(g, g.unsqueeze(same, [0, 1]), 'float32'), seg);
  const h = g.multiHeadAttention(x, x, x, { numHeads: H, attentionBias: bias }).out;
  const k = g.mul(h, g.scalar(0.5, 'float32'));
  g.output(g.multiHeadAttention(h, k, h, { numHeads: H, attentionBias: bias }).out, 'y');
  return g;
}

const ops = (g: Graph) => [...everyNode(g.snapshot().nodes)].map((n) => n.opType);

describe('one-frame-attention pass', () => {
  const x = { dtype: 'float32' as const, dims: [1, N, H * HD], data: randn(N * H * HD, 1) };
  it('one frame: the op without its bias, several: as before; the same numbers either way', async () => {
    for (const ids of [Array(N).fill(3), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]]) {
      const { rewrites, diffs } = await passDiffs(tower, [oneFrameAttentionPass], { x, seg: { dtype: 'int64', dims: [N], data: ids } });
      expect(rewrites).toEqual({ 'one-frame-attention': 2 });
      expect(diffs.y).toBeLessThan(1e-6);
    }
  });

  it('one condition shared by the layers; each branch holds one op', () => {
    const g = tower();
    applyPasses(g, [oneFrameAttentionPass]);
    const all = ops(g);
    expect(all.filter((o) => o === 'If')).toHaveLength(2);
    expect(all.filter((o) => o === 'ReduceMin')).toHaveLength(1);
    expect(all.filter((o) => o === 'MultiHeadAttention')).toHaveLength(4);
    const ifs = g.snapshot().nodes.filter((n) => n.opType === 'If');
    const inputsOf = (branch: string) => ifs.map((n) => n.attribute!.find((a) => a.name === branch)!.g!.node![0]!.input!.length);
    expect(inputsOf('then_branch')).toEqual([3, 3]);
    expect(inputsOf('else_branch')).toEqual([6, 6]);
  });
});
