import { describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import { maxAbsDiff, randn, runGraph } from './test-utils/ort.js';
import { sdpaRef } from './test-utils/sdpa.js';

describe('attention ops', () => {
  const [B, H, Hkv, P, S, hd] = [2, 4, 2, 3, 2, 8];
  const T = P + S;
  const q = randn(B * H * S * hd, 21);
  const k = randn(B * Hkv * S * hd, 22);
  const v = randn(B * Hkv * S * hd, 23);
  const pk = randn(B * Hkv * P * hd, 24);
  const pv = randn(B * Hkv * P * hd, 25);
  // Row 1 is left-padded by one position.
  const allowed = (b: number, i: number, j: number) => j <= P + i && !(b === 1 && j === 0);
  const mask = Uint8Array.from({ length: B * S * T }, (_, n) => {
    const b = Math.floor(n / (S * T));
    const i = Math.floor(n / T) % S;
    return allowed(b, i, n % T) ? 1 : 0;
  });
  const cat = (past: Float32Array, cur: Float32Array) => {
    const out = new Float32Array(B * Hkv * T * hd);
    for (let b = 0; b < B; b++)
      for (let h = 0; h < Hkv; h++) {
        out.set(past.subarray((b * Hkv + h) * P * hd, (b * Hkv + h + 1) * P * hd), (b * Hkv + h) * T * hd);
        out.set(cur.subarray((b * Hkv + h) * S * hd, (b * Hkv + h + 1) * S * hd), ((b * Hkv + h) * T + P) * hd);
      }
    return out;
  };
  const ref = sdpaRef(q, cat(pk, k), cat(pv, v), B, H, Hkv, S, T, hd, allowed);

  it('opset-23 Attention: GQA with a KV cache and a padding mask matches the reference', async () => {
    const g = new Graph();
    const qi = g.input('q', 'float32', ['B', H, 'S', hd]);
    const ki = g.input('k', 'float32', ['B', Hkv, 'S', hd]);
    const vi = g.input('v', 'float32', ['B', Hkv, 'S', hd]);
    const pki = g.input('pk', 'float32', ['B', Hkv, 'P', hd]);
    const pvi = g.input('pv', 'float32', ['B', Hkv, 'P', hd]);
    const m = g.input('mask', 'bool', ['B', 1, 'S', 'T']);
    const r = g.attention(qi, ki, vi, { mask: m, pastKey: pki, pastValue: pvi });
    g.output(r.out, 'y');
    g.output(r.presentKey!, 'present_key');
    const out = await runGraph(g, {
      q: { dtype: 'float32', dims: [B, H, S, hd], data: q },
      k: { dtype: 'float32', dims: [B, Hkv, S, hd], data: k },
      v: { dtype: 'float32', dims: [B, Hkv, S, hd], data: v },
      pk: { dtype: 'float32', dims: [B, Hkv, P, hd], data: pk },
      pv: { dtype: 'float32', dims: [B, Hkv, P, hd], data: pv },
      mask: { dtype: 'bool', dims: [B, 1, S, T], data: mask },
    });
    expect(out.present_key!.dims).toEqual([B, Hkv, T, hd]);
    expect(maxAbsDiff(out.y!.data as Float32Array, ref)).toBeLessThan(1e-5);
  });

  it('com.microsoft MultiHeadAttention with an additive bias matches the reference', async () => {
    // MHA has no GQA: repeat kv heads, and lay q/k/v out as [B, S, H*hd].
    const toBSD = (x: Float32Array, heads: number, len: number, repeat: number) => {
      const out = new Float32Array(B * len * heads * repeat * hd);
      for (let b = 0; b < B; b++)
        for (let h = 0; h < heads * repeat; h++)
          for (let s = 0; s < len; s++)
            for (let d = 0; d < hd; d++)
              out[((b * len + s) * heads * repeat + h) * hd + d] = x[((b * heads + Math.floor(h / repeat)) * len + s) * hd + d]!;
      return out;
    };
    const g = new Graph();
    const qi = g.input('q', 'float32', ['B', 'S', H * hd]);
    const ki = g.input('k', 'float32', ['B', 'T', H * hd]);
    const vi = g.input('v', 'float32', ['B', 'T', H * hd]);
    const m = g.input('mask', 'bool', ['B', 1, 'S', 'T']);
    const bias = g.where(m, 0, g.scalar(-1e9, 'float32'));
    g.output(g.multiHeadAttention(qi, ki, vi, { numHeads: H, attentionBias: bias }).out, 'y');
    const out = await runGraph(g, {
      q: { dtype: 'float32', dims: [B, S, H * hd], data: toBSD(q, H, S, 1) },
      k: { dtype: 'float32', dims: [B, T, H * hd], data: toBSD(cat(pk, k), Hkv, T, H / Hkv) },
      v: { dtype: 'float32', dims: [B, T, H * hd], data: toBSD(cat(pv, v), Hkv, T, H / Hkv) },
      mask: { dtype: 'bool', dims: [B, 1, S, T], data: mask },
    });
    expect(maxAbsDiff(out.y!.data as Float32Array, toBSD(ref, H, S, 1))).toBeLessThan(1e-5);
  });

  it('RotaryEmbedding (opset 23) rotates interleaved pairs and halves with per-token cos/sin', async () => {
    const [b, h, s, d] = [1, 2, 3, 8];
    const x = randn(b * h * s * d, 31);
    const ang = randn(b * s * (d / 2), 32);
    const cos = ang.map(Math.cos);
    const sin = ang.map(Math.sin);
    for (const interleaved of [true, false]) {
      const g = new Graph();
      const xi = g.input('x', 'float32', [b, h, s, d]);
      const ci = g.input('cos', 'float32', [b, s, d / 2]);
      const si = g.input('sin', 'float32', [b, s, d / 2]);
      g.output(g.rotaryEmbedding(xi, ci, si, { interleaved }), 'y');
      const out = await runGraph(g, {
        x: { dtype: 'float32', dims: [b, h, s, d], data: x },
        cos: { dtype: 'float32', dims: [b, s, d / 2], data: cos },
        sin: { dtype: 'float32', dims: [b, s, d / 2], data: sin },
      });
      const expected = new Float32Array(x.length);
      for (let hh = 0; hh < h; hh++)
        for (let t = 0; t < s; t++)
          for (let i = 0; i < d / 2; i++) {
            const base = (hh * s + t) * d;
            const [a, c] = interleaved ? [base + 2 * i, base + 2 * i + 1] : [base + i, base + i + d / 2];
            const [co, sn] = [cos[t * (d / 2) + i]!, sin[t * (d / 2) + i]!];
            expected[a] = x[a]! * co - x[c]! * sn;
            expected[c] = x[c]! * co + x[a]! * sn;
          }
      expect(maxAbsDiff(out.y!.data as Float32Array, expected)).toBeLessThan(1e-5);
    }
  });
});
