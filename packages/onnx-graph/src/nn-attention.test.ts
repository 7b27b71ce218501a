import { describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import { causalChunkedAttention, stepAttention } from './nn-attention.js';
import { maxAbsDiff, randn, runGraph } from './test-utils/ort.js';
import { attentionInputs, sdpaRef } from './test-utils/sdpa.js';

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
      const { q: qi, k: ki, v: vi, pk: pki, pv: pvi, mask: m } = attentionInputs(g, { H, Hkv, hd }, { seq: 1, past: 'C' });
      const sizes = { numHeads: H, kvNumHeads: Hkv, headDim: hd, scale: 1 / Math.sqrt(hd) };
      const y = stepAttention(g, { q: qi, k: ki, v: vi, past: { key: pki, value: pvi }, mask: m }, sizes);
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
    expect(() =>
      stepAttention(
        g,
        { q, k: kv, v: kv, past: { key: past, value: past }, mask: m },
        { numHeads: 6, kvNumHeads: 4, headDim: 8, scale: 1 },
      ),
    ).toThrow(/query heads 6 are not a multiple of KV heads 4/);
    const h = g.cast(q, 'float16');
    expect(() =>
      stepAttention(
        g,
        { q: h, k: kv, v: kv, past: { key: past, value: past }, mask: m },
        { numHeads: 6, kvNumHeads: 2, headDim: 8, scale: 1 },
      ),
    ).toThrow(/computes in float32/);
  });
});

// A prompt after a cache: causalChunkedAttention against the reference and against one ONNX Attention.
describe('nn.causalChunkedAttention', () => {
  const [B, H, Hkv, hd] = [2, 4, 2, 8];
  const cases = [
    { S: 37, C: 0, chunks: 4 },
    { S: 10, C: 4, chunks: 4 },
    { S: 9, C: 3, chunks: 2 },
    { S: 4, C: 0, chunks: 4 },
  ];
  for (const { S, C, chunks } of cases) {
    it(`S ${S} after ${C} cache slots, ${chunks} chunks: the op's numbers`, async () => {
      const T = C + S;
      const q = randn(B * S * H * hd, 41 + S);
      const k = randn(B * S * Hkv * hd, 42);
      const v = randn(B * S * Hkv * hd, 43);
      const pk = randn(B * Hkv * C * hd, 44);
      const pv = randn(B * Hkv * C * hd, 45);
      // Causal over the new positions; row 0's cache slot 1 free (junk), row 1 left-padded by 2 new positions.
      const allowed = (b: number, i: number, j: number) =>
        (j < C ? !(b === 0 && j === 1) : j - C <= i) && !(b === 1 && j >= C && j < C + 2);
      const mask = Uint8Array.from({ length: B * S * T }, (_, n) => {
        const b = Math.floor(n / (S * T));
        return allowed(b, Math.floor(n / T) % S, n % T) ? 1 : 0;
      });
      // [B, S, X*hd] -> [B, X, S, hd]
      const heads = (x: Float32Array, X: number, L: number) => {
        const out = new Float32Array(x.length);
        for (let b = 0; b < B; b++)
          for (let s = 0; s < L; s++)
            for (let h = 0; h < X; h++)
              for (let d = 0; d < hd; d++) out[((b * X + h) * L + s) * hd + d] = x[((b * L + s) * X + h) * hd + d]!;
        return out;
      };
      const cat = (past: Float32Array, cur: Float32Array) => {
        const c = heads(cur, Hkv, S);
        const out = new Float32Array(B * Hkv * T * hd);
        for (let b = 0; b < B; b++)
          for (let h = 0; h < Hkv; h++) {
            out.set(past.subarray((b * Hkv + h) * C * hd, (b * Hkv + h + 1) * C * hd), (b * Hkv + h) * T * hd);
            out.set(c.subarray((b * Hkv + h) * S * hd, (b * Hkv + h + 1) * S * hd), ((b * Hkv + h) * T + C) * hd);
          }
        return out;
      };
      const refHeads = sdpaRef(heads(q, H, S), cat(pk, k), cat(pv, v), B, H, Hkv, S, T, hd, allowed);
      // Padded query rows (every key masked) are NaN in the reference: compare the rest.
      const g = new Graph();
      const { q: qi, k: ki, v: vi, pk: pki, pv: pvi, mask: m } = attentionInputs(g, { H, Hkv, hd }, { seq: 'S', past: 'C' });
      const sizes = { numHeads: H, kvNumHeads: Hkv, headDim: hd, scale: 1 / Math.sqrt(hd) };
      const y = causalChunkedAttention(g, { q: qi, k: ki, v: vi, past: { key: pki, value: pvi }, mask: m }, sizes, chunks);
      expect(y.shape).toEqual(qi.shape);
      g.output(y, 'y');
      g.output(g.attention(qi, ki, vi, { qNumHeads: H, kvNumHeads: Hkv, mask: m, pastKey: pki, pastValue: pvi }).out, 'op');
      const out = await runGraph(g, {
        q: { dtype: 'float32', dims: [B, S, H * hd], data: q },
        k: { dtype: 'float32', dims: [B, S, Hkv * hd], data: k },
        v: { dtype: 'float32', dims: [B, S, Hkv * hd], data: v },
        pk: { dtype: 'float32', dims: [B, Hkv, C, hd], data: pk },
        pv: { dtype: 'float32', dims: [B, Hkv, C, hd], data: pv },
        mask: { dtype: 'bool', dims: [B, 1, S, T], data: mask },
      });
      const yv = out.y!.data as Float32Array;
      const op = out.op!.data as Float32Array;
      expect(out.y!.dims).toEqual([B, S, H * hd]);
      const yh = heads(yv, H, S);
      const opH = heads(op, H, S);
      let checked = 0;
      for (let n = 0; n < refHeads.length; n++) {
        if (Number.isNaN(refHeads[n]!)) continue;
        expect(Math.abs(yh[n]! - refHeads[n]!)).toBeLessThan(1e-5);
        checked++;
      }
      expect(checked).toBeGreaterThan(refHeads.length / 2);
      // Every row, padded ones included, is the op's own result.
      expect(maxAbsDiff(yv, op)).toBeLessThan(1e-6);
      expect(Number.isNaN(maxAbsDiff(opH, yh))).toBe(false);
    });
  }
});
