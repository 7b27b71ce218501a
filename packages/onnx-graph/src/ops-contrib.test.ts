import { describe, expect, it } from 'vitest';
import { interleavedGateUp, stackedExperts } from './expert-weights.js';
import { Graph } from './graph.js';
import { maskToBias, repeatKvHeads } from './nn.js';
import { opSet } from './ops-contrib.js';
import { tensorFromArray } from './tensor-ref.js';
import { maxAbsDiff, randn, runGraph } from './test-utils/ort.js';
import { attentionInputs } from './test-utils/sdpa.js';

// Each com.microsoft op against the standard ops it replaces, both run by ORT's CPU EP on the same inputs.

describe('com.microsoft ops vs the standard ops', () => {
  it('SkipSimplifiedLayerNormalization = Add + RMSNormalization (both outputs)', async () => {
    const [B, S, D] = [2, 3, 16];
    const g = new Graph();
    const x = g.input('x', 'float32', ['B', 'S', D]);
    const skip = g.input('skip', 'float32', ['B', 'S', D]);
    const gamma = g.input('gamma', 'float32', [D]);
    const fused = g.skipSimplifiedLayerNorm(skip, x, gamma, 1e-5);
    const sum = g.add(x, skip);
    g.output(fused.out, 'fused');
    g.output(fused.sum, 'fused_sum');
    g.output(g.rmsNorm(sum, gamma, 1e-5), 'ref');
    g.output(sum, 'ref_sum');
    const n = B * S * D;
    const out = await runGraph(g, {
      x: { dtype: 'float32', dims: [B, S, D], data: randn(n, 1) },
      skip: { dtype: 'float32', dims: [B, S, D], data: randn(n, 2) },
      gamma: { dtype: 'float32', dims: [D], data: randn(D, 3) },
    });
    expect(maxAbsDiff(out.fused!.data as Float32Array, out.ref!.data as Float32Array)).toBeLessThan(1e-5);
    expect(maxAbsDiff(out.fused_sum!.data as Float32Array, out.ref_sum!.data as Float32Array)).toBe(0);
  });

  for (const interleaved of [false, true]) {
    it(`RotaryEmbedding on per-token tables (flattened cache, b*S+s ids) = opset-23 RotaryEmbedding, interleaved ${interleaved}`, async () => {
      const [B, S, H, hd] = [2, 5, 3, 8];
      const g = new Graph();
      const x = g.input('x', 'float32', ['B', 'S', H * hd]);
      const cos = g.input('cos', 'float32', ['B', 'S', hd / 2]);
      const sin = g.input('sin', 'float32', ['B', 'S', hd / 2]);
      const cache = g.perTokenRotaryCache(cos, sin);
      g.output(g.contribRotaryEmbedding(x, cache.positionIds, cache, { interleaved, numHeads: H }), 'fused');
      g.output(g.rotaryEmbedding(x, cos, sin, { interleaved, numHeads: H }), 'ref');
      // Tables of arbitrary angles: each token its own row, as ERNIE's 3D positions give.
      const angles = randn(B * S * (hd / 2), 4);
      const out = await runGraph(g, {
        x: { dtype: 'float32', dims: [B, S, H * hd], data: randn(B * S * H * hd, 5) },
        cos: { dtype: 'float32', dims: [B, S, hd / 2], data: angles.map(Math.cos) },
        sin: { dtype: 'float32', dims: [B, S, hd / 2], data: angles.map(Math.sin) },
      });
      expect(maxAbsDiff(out.fused!.data as Float32Array, out.ref!.data as Float32Array)).toBeLessThan(1e-6);
    });
  }

  // Attention over a KV cache with left padding: row 1 has `pad` padded positions at the start.
  const [H, Hkv, hd] = [4, 2, 8];
  async function attentionCase(B: number, P: number, S: number, kernel: 'mha' | 'gqa') {
    const T = P + S;
    const pad = 2;
    const g = new Graph();
    const { q, k, v, pk, pv, mask } = attentionInputs(g, { H, Hkv, hd }, { seq: 'S', past: 'P' });
    const ref = g.attention(q, k, v, { qNumHeads: H, kvNumHeads: Hkv, mask, pastKey: pk, pastValue: pv });
    g.output(ref.out, 'ref');
    g.output(ref.presentKey!, 'ref_key');
    const bias = maskToBias(g, mask);
    if (kernel === 'mha') {
      const heads = (x: typeof k) => g.transpose(g.reshape(x, [0, 0, Hkv, hd]), [0, 2, 1, 3]);
      const key = g.concat([pk, heads(k)], 2);
      const value = g.concat([pv, heads(v)], 2);
      const r = g.multiHeadAttention(q, repeatKvHeads(g, key, H / Hkv), repeatKvHeads(g, value, H / Hkv), {
        numHeads: H,
        attentionBias: bias,
      });
      g.output(r.out, 'fused');
      g.output(key, 'fused_key');
    } else {
      const total = g.cast(g.squeeze(g.shapeOf(mask, 3, 4), [0]), 'int32');
      const seqlensK = g.expand(g.sub(total, g.scalar(1, 'int32')), g.shapeOf(mask, 0, 1), ['B']);
      const r = g.groupQueryAttentionWithBias(
        q,
        k,
        v,
        { key: pk, value: pv },
        { seqlensK, totalSequenceLength: total, attentionBias: bias },
        { numHeads: H, kvNumHeads: Hkv },
      );
      g.output(r.out, 'fused');
      g.output(r.presentKey, 'fused_key');
    }
    const allowed = (b: number, i: number, j: number) => j <= P + i && !(b === 1 && j < pad && j !== P + i);
    const maskData = Uint8Array.from({ length: B * S * T }, (_, n) => {
      const b = Math.floor(n / (S * T));
      return allowed(b, Math.floor(n / T) % S, n % T) ? 1 : 0;
    });
    const out = await runGraph(g, {
      q: { dtype: 'float32', dims: [B, S, H * hd], data: randn(B * S * H * hd, 11) },
      k: { dtype: 'float32', dims: [B, S, Hkv * hd], data: randn(B * S * Hkv * hd, 12) },
      v: { dtype: 'float32', dims: [B, S, Hkv * hd], data: randn(B * S * Hkv * hd, 13) },
      pk: { dtype: 'float32', dims: [B, Hkv, P, hd], data: randn(B * Hkv * P * hd, 14) },
      pv: { dtype: 'float32', dims: [B, Hkv, P, hd], data: randn(B * Hkv * P * hd, 15) },
      mask: { dtype: 'bool', dims: [B, 1, S, T], data: maskData },
    });
    return {
      out: maxAbsDiff(out.fused!.data as Float32Array, out.ref!.data as Float32Array),
      key: maxAbsDiff(out.fused_key!.data as Float32Array, out.ref_key!.data as Float32Array),
    };
  }

  const cases: [number, number, number][] = [
    [2, 0, 5], // prefill, batch of 2, left padded
    [2, 6, 1], // decode step
    [1, 4, 3], // multi-token step with a past, batch 1
    [2, 4, 3], // multi-token step with a past, batch 2
  ];
  for (const [B, P, S] of cases) {
    it(`MultiHeadAttention (KV heads repeated, additive bias) = opset-23 Attention: B ${B}, past ${P}, S ${S}`, async () => {
      const d = await attentionCase(B, P, S, 'mha');
      expect(d.out).toBeLessThan(1e-5);
      expect(d.key).toBe(0);
    });
  }
  for (const [B, P, S] of cases.slice(0, 3)) {
    it(`GroupQueryAttention (additive bias) = opset-23 Attention: B ${B}, past ${P}, S ${S}`, async () => {
      const d = await attentionCase(B, P, S, 'gqa');
      expect(d.out).toBeLessThan(1e-5);
      expect(d.key).toBe(0);
    });
  }
  it("GroupQueryAttention on ORT's CPU EP refuses batch > 1 with S > 1 and a past (why decoders use MultiHeadAttention there)", async () => {
    await expect(attentionCase(2, 4, 3, 'gqa')).rejects.toThrow(/batch_size must be 1 when sequence_length > 1 and past context is given/);
  });

  it("MoE with a masked router = ERNIE's bias-corrected top-k (chosen by softmax + bias, weighted by the renormalized softmax)", async () => {
    const [N, D, I, E, k] = [6, 8, 4, 5, 2];
    const gates = Array.from({ length: E }, (_, e) => randn(I * D, 30 + e));
    const ups = Array.from({ length: E }, (_, e) => randn(I * D, 40 + e));
    const downs = Array.from({ length: E }, (_, e) => randn(D * I, 50 + e));
    const xs = randn(N * D, 60);
    const logits = randn(N * E, 61);
    const bias = randn(E, 62).map((b) => 0.5 * b); // large enough to change choices
    // Reference (HF Ernie4_5_VLMoeMoeTopKRouter + experts), in float64.
    const silu = (v: number) => v / (1 + Math.exp(-v));
    const want = new Float32Array(N * D);
    let changed = 0;
    for (let n = 0; n < N; n++) {
      const l = Array.from(logits.subarray(n * E, (n + 1) * E));
      const m = Math.max(...l);
      const z = l.reduce((a, v) => a + Math.exp(v - m), 0);
      const p = l.map((v) => Math.exp(v - m) / z);
      const chosen = [...p.keys()].sort((a, b) => p[b]! + bias[b]! - (p[a]! + bias[a]!)).slice(0, k);
      const plain = [...p.keys()].sort((a, b) => p[b]! - p[a]!).slice(0, k);
      if (chosen.some((e) => !plain.includes(e))) changed++;
      const sum = chosen.reduce((a, e) => a + p[e]!, 0);
      for (const e of chosen) {
        const h = Array.from({ length: I }, (_, i) => {
          let gv = 0;
          let uv = 0;
          for (let d = 0; d < D; d++) {
            gv += gates[e]![i * D + d]! * xs[n * D + d]!;
            uv += ups[e]![i * D + d]! * xs[n * D + d]!;
          }
          return silu(gv) * uv;
        });
        for (let d = 0; d < D; d++) {
          let y = 0;
          for (let i = 0; i < I; i++) y += downs[e]![d * I + i]! * h[i]!;
          want[n * D + d] = want[n * D + d]! + (p[e]! / sum) * y;
        }
      }
    }
    expect(changed).toBeGreaterThan(0); // the bias must matter for the test to mean anything
    const g = new Graph();
    const x = g.input('x', 'float32', ['N', D]);
    const router = g.input('logits', 'float32', ['N', E]);
    const b = g.constant('float32', [E], bias);
    const ref = (a: Float32Array, shape: number[]) => tensorFromArray('float32', shape, a);
    const fc1 = g.initializer(
      'fc1',
      interleavedGateUp(
        gates.map((a) => ref(a, [I, D])),
        ups.map((a) => ref(a, [I, D])),
      ),
    );
    const fc2 = g.initializer('fc2', stackedExperts(downs.map((a) => ref(a, [D, I]))));
    // The selection in the graph; the op then sees only the chosen experts' logits (the rest -1e30).
    const [, ids] = g.topk(g.add(g.softmax(router, -1), b), k, -1);
    const chosen = g.reduceMax(
      g.equal(
        g.unsqueeze(ids, [2]),
        g.constant(
          'int64',
          [1, 1, E],
          Array.from({ length: E }, (_, e) => e),
        ),
      ),
      [1],
      false,
    );
    g.output(g.moe(x, g.where(chosen, router, g.scalar(-1e30, 'float32')), fc1, fc2, { k }), 'y');
    const out = await runGraph(g, {
      x: { dtype: 'float32', dims: [N, D], data: xs },
      logits: { dtype: 'float32', dims: [N, E], data: logits },
    });
    expect(maxAbsDiff(out.y!.data as Float32Array, want)).toBeLessThan(1e-5);
  });

  it('opSet names the choices', () => {
    expect(opSet('contrib')).toBe('contrib');
    expect(() => opSet('fused')).toThrow(/ops must be one of onnx, contrib, got 'fused'/);
  });
});
