// The passes onnxruntime-web's WebGPU kernels need (WEBGPU_PASSES): each graph run before and after on ORT's
// CPU EP gives the same numbers (to a rounding), the empty scatter included.
import { describe, expect, it } from 'vitest';
import { Graph } from '../graph.js';
import { everyNode } from '../nodes.js';
import { maxAbsDiff, passDiffs, randn, runGraph } from '../test-utils/ort.js';
import { nonEmptyScatterPass } from './non-empty-scatter.js';
import { applyPasses } from './rewrite.js';
import { webgpuAttentionPass } from './webgpu-attention.js';
import { webgpuGeluPass } from './webgpu-gelu.js';
import { WEBGPU_OPSET, webgpuOpsetPass } from './webgpu-opset.js';

const [S, H, HD] = [6, 2, 4];

/**
 * MultiHeadAttention over x [B, S, H*HD] with a block-diagonal bias [1, 1, S, S] (two frames of 3) and the
 * given scale (undefined: the kernel's 1/sqrt(HD)), and one with a full bias already.
 */
function attention(scale: number | undefined): Graph {
  const g = new Graph();
  const x = g.input('x', 'float32', ['batch', S, H * HD]);
  const frame = Array.from({ length: S * S }, (_, k) => (Math.floor(k / S / 3) === Math.floor((k % S) / 3) ? 0 : -1e9));
  const bias = g.constant('float32', [1, 1, S, S], frame);
  const full = g.constant('float32', [2, H, S, S], randn(2 * H * S * S, 9));
  const k = g.mul(x, g.scalar(0.5, 'float32'));
  const y = g.multiHeadAttention(x, k, x, { numHeads: H, ...(scale === undefined ? {} : { scale }), attentionBias: bias }).out;
  g.output(y, 'y');
  // Already full (batch 2 declared, num_heads heads): left alone.
  const x2 = g.input('x2', 'float32', [2, S, H * HD]);
  g.output(g.multiHeadAttention(x2, x2, x2, { numHeads: H, attentionBias: full }).out, 'y2');
  return g;
}

/** Rows of `u` scattered into h [N, D] at `at` (int64 [n, 1]), plainly and with 'add'. */
function scatter(): Graph {
  const g = new Graph();
  const h = g.input('h', 'float32', ['n', 5]);
  const at = g.input('at', 'int64', ['k', 1]);
  const u = g.input('u', 'float32', ['k', 5]);
  g.output(g.scatterND(h, at, u), 'set');
  g.output(g.scatterND(h, at, u, 'add'), 'added');
  return g;
}

const ops = (g: Graph) => [...everyNode(g.snapshot().nodes)].map((n) => n.opType);

describe('webgpu-attention pass', () => {
  const feeds = {
    x: { dtype: 'float32' as const, dims: [2, S, H * HD], data: randn(2 * S * H * HD, 1) },
    x2: { dtype: 'float32' as const, dims: [2, S, H * HD], data: randn(2 * S * H * HD, 2) },
  };

  it('expands a broadcast attention bias to [B, num_heads, S, T]: the same bits; a full one is left', async () => {
    for (const scale of [undefined, 1 / Math.sqrt(HD)]) {
      const { rewrites, diffs } = await passDiffs(() => attention(scale), [webgpuAttentionPass], feeds);
      expect(rewrites).toEqual({ 'webgpu-attention': 1 });
      expect(diffs).toEqual({ y: 0, y2: 0 });
    }
    const g = attention(undefined);
    applyPasses(g, [webgpuAttentionPass]);
    const mha = [...everyNode(g.snapshot().nodes)].filter((n) => n.opType === 'MultiHeadAttention');
    expect(g.typeOf(mha[0]!.input![5]!)?.shape).toEqual(['batch', H, S, S]);
    expect(mha[1]!.input![5]).toBe(
      attention(undefined)
        .snapshot()
        .nodes.find((n) => n.opType === 'MultiHeadAttention' && n.input?.[0] === 'x2')!.input![5],
    );
    expect(ops(g).filter((o) => o === 'Expand')).toHaveLength(1);
  });

  it('folds a scale other than 1/sqrt(head_size) into q and drops the attribute: within one rounding', async () => {
    const { rewrites, diffs } = await passDiffs(() => attention(0.3), [webgpuAttentionPass], feeds);
    expect(rewrites).toEqual({ 'webgpu-attention': 1 });
    expect(diffs.y).toBeLessThan(1e-6);
    expect(diffs.y2).toBe(0);
    const g = attention(0.3);
    applyPasses(g, [webgpuAttentionPass]);
    const mha = [...everyNode(g.snapshot().nodes)].find((n) => n.opType === 'MultiHeadAttention' && n.input?.[0] !== 'x2')!;
    expect(mha.attribute?.map((a) => a.name)).toEqual(['num_heads']);
    // The scale matters here (0.3 against the default 0.5): the folded q is what carries it.
    const [asked, fallback] = [await runGraph(attention(0.3), feeds), await runGraph(attention(undefined), feeds)];
    expect(maxAbsDiff(asked.y!.data as Float32Array, fallback.y!.data as Float32Array)).toBeGreaterThan(1e-2);
  });
});

describe('non-empty-scatter pass', () => {
  it('scatters through a spare row: the same rows, with and without reduction, for k = 3 and k = 0 updates', async () => {
    for (const k of [3, 0]) {
      const feeds = {
        h: { dtype: 'float32' as const, dims: [4, 5], data: randn(20, 3) },
        at: { dtype: 'int64' as const, dims: [k, 1], data: BigInt64Array.from([2n, 0n, 3n].slice(0, k)) },
        u: { dtype: 'float32' as const, dims: [k, 5], data: randn(k * 5, 4) },
      };
      const { rewrites, diffs } = await passDiffs(scatter, [nonEmptyScatterPass], feeds);
      expect(rewrites).toEqual({ 'non-empty-scatter': 2 });
      expect(diffs).toEqual({ set: 0, added: 0 });
    }
    const g = scatter();
    applyPasses(g, [nonEmptyScatterPass]);
    const scatters = [...everyNode(g.snapshot().nodes)].filter((n) => n.opType === 'ScatterND');
    expect(scatters.map((n) => n.attribute?.map((a) => [a.name, new TextDecoder().decode(a.s ?? new Uint8Array())]))).toEqual([
      [],
      [['reduction', 'add']],
    ]);
  });
});

describe('webgpu-gelu pass', () => {
  /** Gelu in both forms over x [n, 8]; the exact one (erf) must stay. */
  function gelus(): Graph {
    const g = new Graph();
    const x = g.input('x', 'float32', ['n', 8]);
    g.output(g.gelu(x, 'tanh'), 'tanh');
    g.output(g.gelu(x), 'erf');
    return g;
  }

  it('writes the tanh form as x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)): within a few roundings; erf left', async () => {
    // Values from -12 to 12: both tails (sigmoid of a large |z|) and the curved middle.
    const data = Float32Array.from({ length: 8 * 64 }, (_, k) => -12 + (24 * k) / (8 * 64 - 1));
    const { rewrites, diffs } = await passDiffs(gelus, [webgpuGeluPass], { x: { dtype: 'float32', dims: [64, 8], data } });
    expect(rewrites).toEqual({ 'webgpu-gelu': 1 });
    expect(diffs.erf).toBe(0);
    expect(diffs.tanh).toBeLessThan(2e-6);
    const g = gelus();
    applyPasses(g, [webgpuGeluPass]);
    expect(ops(g).filter((o) => o === 'Gelu')).toHaveLength(1);
    expect(ops(g)).toContain('Sigmoid');
  });
});

describe('webgpu-opset pass', () => {
  const [B, T, NH, D] = [2, 5, 2, 8];
  /** RMSNormalization and RotaryEmbedding (halves and pairs, per-token tables) over x [B, T, NH*D], then a Transpose. */
  function opset23(withAttention = false): Graph {
    const g = new Graph();
    const x = g.input('x', 'float32', [B, T, NH * D]);
    const cos = g.input('cos', 'float32', [B, T, D / 2]);
    const sin = g.input('sin', 'float32', [B, T, D / 2]);
    const n = g.rmsNorm(x, g.constant('float32', [NH * D], randn(NH * D, 3)), 1e-6);
    const halves = g.rotaryEmbedding(n, cos, sin, { interleaved: false, numHeads: NH });
    const pairs = g.rotaryEmbedding(n, cos, sin, { interleaved: true, numHeads: NH });
    g.output(g.transpose(g.reshape(halves, [B, T, NH, D]), [0, 2, 1, 3]), 'halves');
    g.output(pairs, 'pairs');
    // Rotary tables made in the graph (angles up to ~3000 rad), and a Conv.
    const angle = g.mul(cos, g.scalar(1500, 'float32'));
    g.output(g.emit('Cos', [angle], [{ dtype: 'float32', shape: angle.shape }])[0]!, 'cos_angle');
    g.output(g.emit('Sin', [angle], [{ dtype: 'float32', shape: angle.shape }])[0]!, 'sin_angle');
    const img = g.reshape(x, [B, T, NH, D]);
    g.output(g.conv(img, g.constant('float32', [3, T, 2, 2], randn(3 * T * 4, 4)), undefined, { strides: [2, 2] }), 'conv');
    if (withAttention) g.output(g.attention(halves, pairs, n, { qNumHeads: NH, kvNumHeads: NH }).out, 'attn');
    return g;
  }
  const feeds = {
    x: { dtype: 'float32' as const, dims: [B, T, NH * D], data: randn(B * T * NH * D, 1) },
    cos: { dtype: 'float32' as const, dims: [B, T, D / 2], data: randn(B * T * (D / 2), 2).map(Math.cos) },
    sin: { dtype: 'float32' as const, dims: [B, T, D / 2], data: randn(B * T * (D / 2), 2).map(Math.sin) },
  };

  it('rewrites the opset-23 norm and rotary (to a rounding) and declares opset 21', async () => {
    const { rewrites, diffs } = await passDiffs(opset23, [webgpuOpsetPass], feeds);
    expect(rewrites).toEqual({ 'webgpu-opset': 6 });
    expect(diffs.halves).toBeLessThan(1e-6);
    expect(diffs.pairs).toBeLessThan(1e-6);
    // float64 rounded to float32: the float32 kernel's result to an ulp.
    expect(diffs.cos_angle).toBeLessThan(2e-7);
    expect(diffs.sin_angle).toBeLessThan(2e-7);
    expect(diffs.conv).toBe(0);
    const g = opset23();
    applyPasses(g, [webgpuOpsetPass]);
    expect(g.opset).toBe(WEBGPU_OPSET);
    expect(ops(g)).toEqual(expect.arrayContaining(['SimplifiedLayerNormalization', 'RotaryEmbedding']));
    expect([...everyNode(g.snapshot().nodes)].filter((n) => n.opType === 'RotaryEmbedding').map((n) => n.domain)).toEqual([
      'com.microsoft',
      'com.microsoft',
    ]);
    // The two rotaries share one cache of the tables.
    expect(ops(g).filter((o) => o === 'Range')).toHaveLength(1);
    const nodes = [...everyNode(g.snapshot().nodes)];
    const conv = nodes.find((n) => n.opType === 'Conv')!;
    expect(conv.attribute?.find((a) => a.name === 'dilations')?.ints).toEqual([1, 1]);
    const producer = (name: string) => nodes.find((n) => n.output?.includes(name));
    for (const trig of nodes.filter((n) => n.opType === 'Cos' || n.opType === 'Sin')) {
      expect(producer(trig.input![0]!)?.opType).toBe('Cast');
    }
  });

  it('keeps opset 23 while an op it cannot rewrite (the opset Attention) is left', () => {
    const g = opset23(true);
    applyPasses(g, [webgpuOpsetPass]);
    expect(g.opset).toBe(23);
    expect(ops(g)).toContain('Attention');
    expect(() => g.lowerOpset(24)).toThrow(/not at or below/);
  });
});
