import { describe, expect, it } from 'vitest';
import type { Graph } from '../graph.js';
import { everyNode } from '../nodes.js';
import { type AttentionGraphOptions, attentionFeeds, decoderAttentionGraph } from '../test-utils/attention-graph.js';
import { passDiffs } from '../test-utils/ort.js';
import { contribAttentionPass } from './contrib-attention.js';
import { applyPasses } from './rewrite.js';

/** Node count per `domain:opType`, bodies included. */
function opCounts(g: Graph): Record<string, number> {
  const m: Record<string, number> = {};
  for (const n of everyNode(g.nodes)) {
    const k = `${n.domain ? `${n.domain}:` : ''}${n.opType}`;
    m[k] = (m[k] ?? 0) + 1;
  }
  return m;
}

const base: AttentionGraphOptions = { layers: 2, heads: 4, kvHeads: 2, headDim: 8 };

// Each case: the graph before and after the pass on random inputs, a left-padded batch over a cache. Float32
// differs by float summation order only (max |diff| <= 1e-5 on outputs of size ~1); float16 by the rotary running
// in the activations' dtype instead of float32 and the kernels' rounding (<= 4e-3: two float16 steps at 2-4).
describe('contribAttentionPass', () => {
  const cases: { label: string; o: AttentionGraphOptions; kernel?: 'mha' | 'gqa'; B: number; S: number; P: number; tol: number }[] = [
    { label: 'float32, MultiHeadAttention (default), prompt over a cache', o: base, B: 2, S: 5, P: 3, tol: 1e-5 },
    { label: 'float32, MultiHeadAttention, GPT-J layout, first step', o: { ...base, interleaved: true }, B: 2, S: 4, P: 0, tol: 1e-5 },
    { label: 'float32, GroupQueryAttention, decode step', o: base, kernel: 'gqa', B: 2, S: 1, P: 6, tol: 1e-5 },
    { label: 'float32, GroupQueryAttention, one row prompt over a cache', o: base, kernel: 'gqa', B: 1, S: 4, P: 3, tol: 1e-5 },
    {
      label: 'float16 (GroupQueryAttention by default), tables cast',
      o: { ...base, computeDtype: 'float16' },
      B: 2,
      S: 1,
      P: 5,
      tol: 4e-3,
    },
    {
      label: 'float16, rotary in float32 between Casts',
      o: { ...base, computeDtype: 'float16', rotaryInFloat32: true },
      B: 2,
      S: 1,
      P: 5,
      tol: 4e-3,
    },
    { label: 'inside If bodies', o: { ...base, inIf: true }, B: 2, S: 3, P: 2, tol: 1e-5 },
  ];
  for (const c of cases) {
    it(`${c.label}: same outputs, every attention rewritten`, async () => {
      const pass = contribAttentionPass(c.kernel ? { kernel: c.kernel } : {});
      const { rewrites, diffs } = await passDiffs(() => decoderAttentionGraph(c.o), [pass], attentionFeeds(c.o, c.B, c.S, c.P));
      const bodies = c.o.inIf ? 2 : 1;
      expect(rewrites).toEqual({ [pass.name]: c.o.layers * bodies });
      console.log(`[contrib-attention] ${c.label}: max |diff| ${Math.max(...Object.values(diffs)).toExponential(2)}`);
      for (const [name, d] of Object.entries(diffs)) expect(d, name).toBeLessThanOrEqual(c.tol);
    });
  }

  it('writes the fused ops and makes the shared inputs once per body', () => {
    const counts = (o: AttentionGraphOptions, kernel?: 'mha' | 'gqa') => {
      const g = decoderAttentionGraph({ ...o, layers: 3 });
      applyPasses(g, [contribAttentionPass(kernel ? { kernel } : {})]);
      return opCounts(g);
    };
    const mha = counts(base);
    expect(mha['com.microsoft:MultiHeadAttention']).toBe(3);
    expect(mha['com.microsoft:RotaryEmbedding']).toBe(6);
    expect([mha.Attention, mha.RotaryEmbedding]).toEqual([undefined, undefined]);
    // The bias (Where) and the rotary cache's position ids (Range beside the mask's two) once.
    expect([mha.Where, mha.Range]).toEqual([1, 3]);
    const gqa = counts({ ...base, computeDtype: 'float16' });
    expect(gqa['com.microsoft:GroupQueryAttention']).toBe(3);
    expect(gqa['com.microsoft:RotaryEmbedding']).toBe(6);
    expect(gqa.Expand).toBe(1);
    // No rotary Cast left (2 tables per rotary): the tables cast once and the length's int32 Cast, beside 3
    // input (q, k, v) and 3 output Casts per layer and the mask's.
    expect(gqa.Cast).toBe(2 + 1 + 3 * 3 + 3 * 3 + 1);
    const inIf = counts({ ...base, inIf: true });
    expect([inIf['com.microsoft:MultiHeadAttention'], inIf.Where]).toEqual([6, 2]);
  });

  it('leaves an attention without the rotary pattern', () => {
    const plain = decoderAttentionGraph({ ...base, rotary: false });
    expect(applyPasses(plain, [contribAttentionPass()])).toEqual({ 'contrib-attention': 0 });
    expect(opCounts(plain).Attention).toBe(2);
  });
});
