import { describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import { stepAttention } from './nn-attention.js';
import { maxAbsDiff, randn, runGraph } from './test-utils/ort.js';
import { sdpaRef } from './test-utils/sdpa.js';

// One decode step over a slot cache: stepAttention against the reference and against ONNX Attention with the
// same past (the op it replaces in decode graphs).
describe('nn.stepAttention', () => {
  const [B, H, hd] = [2, 4, 8];
  const cases = [
    { Hkv: 2, C: 5, note: 'GQA, junk slots masked' },
    { Hkv: 1, C: 5, note: 'one KV head (MQA)' },
    { Hkv: 4, C: 5, note: 'MHA' },
    { Hkv: 2, C: 0, note: 'empty cache (a one-token prompt)' },
    { Hkv: 2, C: 3, note: 'row 1 attends only to its new position' },
  ];
  for (const { Hkv, C, note } of cases) {
    it(`H ${H}, Hkv ${Hkv}, cache ${C}: ${note}`, async () => {
      const T = C + 1;
      const q = randn(B * H * hd, 31 + C);
      const k = randn(B * Hkv * hd, 32 + Hkv);
      const v = randn(B * Hkv * hd, 33);
      const pk = randn(B * Hkv * C * hd, 34);
      const pv = randn(B * Hkv * C * hd, 35);
      const onlyNew = note.startsWith('row 1');
      // Row 0: slot 3 free (junk); row 1: the first two slots padding, or every slot masked.
      const allowed = (b: number, _i: number, j: number) => j === C || (b === 0 ? j !== 3 : !onlyNew && j >= 2);
      const mask = Uint8Array.from({ length: B * T }, (_, n) => (allowed(Math.floor(n / T), 0, n % T) ? 1 : 0));
      const cat = (past: Float32Array, cur: Float32Array) => {
        const out = new Float32Array(B * Hkv * T * hd);
        for (let b = 0; b < B; b++)
          for (let h = 0; h < Hkv; h++) {
            out.set(past.subarray((b * Hkv + h) * C * hd, (b * Hkv + h + 1) * C * hd), (b * Hkv + h) * T * hd);
            out.set(cur.subarray((b * Hkv + h) * hd, (b * Hkv + h + 1) * hd), ((b * Hkv + h) * T + C) * hd);
          }
        return out;
      };
      // With one position, [B, H, 1, hd] and [B, 1, H*hd] are the same memory.
      const ref = sdpaRef(q, cat(pk, k), cat(pv, v), B, H, Hkv, 1, T, hd, allowed);

      const g = new Graph();
      const qi = g.input('q', 'float32', ['B', 1, H * hd]);
      const ki = g.input('k', 'float32', ['B', 1, Hkv * hd]);
      const vi = g.input('v', 'float32', ['B', 1, Hkv * hd]);
      const pki = g.input('pk', 'float32', ['B', Hkv, 'C', hd]);
      const pvi = g.input('pv', 'float32', ['B', Hkv, 'C', hd]);
      const m = g.input('mask', 'bool', ['B', 1, 1, 'T']);
      const sizes = { numHeads: H, kvNumHeads: Hkv, headDim: hd, scale: 1 / Math.sqrt(hd) };
      const y = stepAttention(g, qi, ki, vi, { key: pki, value: pvi }, m, sizes);
      expect(y.shape).toEqual(qi.shape);
      g.output(y, 'y');
      g.output(g.attention(qi, ki, vi, { qNumHeads: H, kvNumHeads: Hkv, mask: m, pastKey: pki, pastValue: pvi }).out, 'op');
      const out = await runGraph(g, {
        q: { dtype: 'float32', dims: [B, 1, H * hd], data: q },
        k: { dtype: 'float32', dims: [B, 1, Hkv * hd], data: k },
        v: { dtype: 'float32', dims: [B, 1, Hkv * hd], data: v },
        pk: { dtype: 'float32', dims: [B, Hkv, C, hd], data: pk },
        pv: { dtype: 'float32', dims: [B, Hkv, C, hd], data: pv },
        mask: { dtype: 'bool', dims: [B, 1, 1, T], data: mask },
      });
      const yv = out.y!.data as Float32Array;
      expect(out.y!.dims).toEqual([B, 1, H * hd]);
      expect(maxAbsDiff(yv, ref)).toBeLessThan(1e-5);
      expect(maxAbsDiff(yv, out.op!.data as Float32Array)).toBeLessThan(1e-6);
    });
  }

  it('refuses heads that do not group and 16-bit inputs, by name', () => {
    const g = new Graph();
    const q = g.input('q', 'float32', ['B', 1, 6 * 8]);
    const kv = g.input('k', 'float32', ['B', 1, 4 * 8]);
    const past = g.input('pk', 'float32', ['B', 4, 'C', 8]);
    const m = g.input('mask', 'bool', ['B', 1, 1, 'T']);
    expect(() => stepAttention(g, q, kv, kv, { key: past, value: past }, m, { numHeads: 6, kvNumHeads: 4, headDim: 8, scale: 1 })).toThrow(
      /query heads 6 are not a multiple of KV heads 4/,
    );
    const h = g.cast(q, 'float16');
    expect(() => stepAttention(g, h, kv, kv, { key: past, value: past }, m, { numHeads: 6, kvNumHeads: 2, headDim: 8, scale: 1 })).toThrow(
      /computes in float32/,
    );
  });
});
