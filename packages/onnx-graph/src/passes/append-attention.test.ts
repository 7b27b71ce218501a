import { describe, expect, it } from 'vitest';
import { everyNode } from '../nodes.js';
import { type AttentionGraphOptions, attentionFeeds, decoderAttentionGraph } from '../test-utils/attention-graph.js';
import { passDiffs } from '../test-utils/ort.js';
import { appendAttentionPass } from './append-attention.js';
import { applyPasses } from './rewrite.js';

// A decoder with an 'append' cache returns the new rows only: the op's present outputs are unread.
const appendGraph: AttentionGraphOptions = { layers: 2, heads: 4, kvHeads: 2, headDim: 8, returnPresent: false };

// Each path of the If against the op on the same inputs: a decode step (stepAttention), a short prompt (the op
// itself) and a long one (4 causal blocks), over a cache whose padded slots hold junk. float32, differing by
// summation order only: max |diff| <= 1e-5 on outputs of size ~1.
describe('appendAttentionPass', () => {
  for (const [label, S, P] of [
    ['decode step', 1, 9],
    ['short prompt over a cache', 6, 3],
    ['long prompt in causal blocks', 130, 4],
    ['long prompt, empty cache', 129, 0],
  ] as const) {
    it(`${label}: same outputs`, async () => {
      const { rewrites, diffs } = await passDiffs(
        () => decoderAttentionGraph(appendGraph),
        [appendAttentionPass],
        attentionFeeds(appendGraph, 2, S, P),
      );
      expect(rewrites).toEqual({ 'append-attention': 2 });
      console.log(`[append-attention] ${label}: max |diff| ${Math.max(...Object.values(diffs)).toExponential(2)}`);
      for (const [name, d] of Object.entries(diffs)) expect(d, name).toBeLessThanOrEqual(1e-5);
    });
  }

  it('puts one If (with a nested If) per attention, and leaves the ops inside it alone', () => {
    const g = decoderAttentionGraph(appendGraph);
    expect(applyPasses(g, [appendAttentionPass, appendAttentionPass])).toEqual({ 'append-attention': 2 });
    const ops = [...everyNode(g.nodes)].map((n) => n.opType);
    expect(ops.filter((t) => t === 'If')).toHaveLength(4);
    // Per layer: the op for short prompts and one per block of the long-prompt path.
    expect(ops.filter((t) => t === 'Attention')).toHaveLength(2 * 5);
    expect(g.nodes.filter((n) => n.opType === 'Attention')).toHaveLength(0);
  });

  it('leaves an attention whose present outputs are read (a concat cache) or that computes in float16', () => {
    for (const o of [
      { ...appendGraph, returnPresent: true },
      { ...appendGraph, computeDtype: 'float16' as const },
    ]) {
      const g = decoderAttentionGraph(o);
      expect(applyPasses(g, [appendAttentionPass])).toEqual({ 'append-attention': 0 });
      expect(g.nodes.filter((n) => n.opType === 'Attention')).toHaveLength(2);
    }
  });
});
