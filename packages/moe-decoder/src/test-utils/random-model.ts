import { type TensorRef, tensorFromArray, Weights } from '@vlmkit/onnx-graph';
import type { ErnieTextConfig } from '../ernie/config.js';
import { ernieTextExpectedParameters } from '../ernie/parameters.js';
import type { GraniteTextConfig } from '../granite/config.js';
import { graniteTextExpectedParameters } from '../granite/parameters.js';
import { randn } from './ort.js';

/** A small config that exercises every path: GQA, dense and MoE layers, unequal text/vision experts, shared experts. */
export const tinyConfig: ErnieTextConfig = {
  hiddenSize: 32,
  numHiddenLayers: 3,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  headDim: 8,
  vocabSize: 50,
  rmsNormEps: 1e-5,
  ropeTheta: 500000,
  freqAllocation: 2,
  intermediateSize: 48,
  mlpLayerTypes: ['dense', 'sparse', 'sparse'],
  moe: { numExperts: [4, 3], topK: 2, intermediateSize: [16, 8], numSharedExperts: 1, normMin: 1e-12 },
  tieWordEmbeddings: true,
};

/**
 * Random float32 weights for every expected parameter: linears N(0, 1.5/sqrt(fan_in))
 * (HF's 0.02 init makes every token look alike), norms near 1, correction
 * biases large enough to change some top-k choices. lm_head is the same
 * TensorRef as embed_tokens (tied).
 */
export function randomWeights(config: ErnieTextConfig, seed = 1): { weights: Weights; arrays: Map<string, Float32Array> } {
  const arrays = new Map<string, Float32Array>();
  const refs = new Map<string, TensorRef>();
  let k = seed * 1000;
  const perExpert = /^(.*\.(text|vision)_experts)\.(\d+)\./;
  // Each modality's experts drawn stacked, [E, 2I, D] gate/up and [E, D, I] down (the reference reads them so),
  // where its first expert is read; per-expert views of them added below. The draws follow the list's order.
  const params = ernieTextExpectedParameters(config).flatMap((p) => {
    const m = perExpert.exec(p.name);
    if (m === null) return [p];
    if (m[3] !== '0' || !p.name.endsWith('.gate_proj.weight')) return [];
    const [I, D] = p.shape as [number, number];
    const E = config.moe.numExperts[m[2] === 'text' ? 0 : 1]!;
    return [
      { name: `${m[1]}.w13_weight`, shape: [E, 2 * I, D] },
      { name: `${m[1]}.w2_weight`, shape: [E, D, I] },
    ];
  });
  for (const p of params) {
    if (p.name === 'lm_head.weight' && config.tieWordEmbeddings) continue;
    const n = p.shape.reduce((a, b) => a * b, 1);
    const fanIn = p.shape[p.shape.length - 1]!;
    let data: Float32Array;
    if (p.name.endsWith('norm.weight') || p.name.endsWith('layernorm.weight')) data = randn(n, k++, 0.1).map((v) => 1 + v);
    else if (p.name.endsWith('e_score_correction_bias')) data = randn(n, k++, 0.15);
    else if (p.name === 'embed_tokens.weight') data = randn(n, k++, 1);
    else data = randn(n, k++, 1.5 / Math.sqrt(fanIn));
    arrays.set(p.name, data);
    refs.set(p.name, tensorFromArray('float32', p.shape, data));
  }
  // Per-expert weights are the stacked tensors' slices, as a checkpoint's per-expert tensors are.
  for (const [name, w13] of arrays) {
    const m = /^(.*_experts)\.w13_weight$/.exec(name);
    if (!m) continue;
    const w2 = arrays.get(`${m[1]}.w2_weight`)!;
    const [E, twoI, D] = params.find((p) => p.name === name)!.shape as [number, number, number];
    const I = twoI / 2;
    for (let e = 0; e < E; e++) {
      const at = (k: string, shape: number[], data: Float32Array) => refs.set(`${m[1]}.${e}.${k}`, tensorFromArray('float32', shape, data));
      at('gate_proj.weight', [I, D], w13.subarray(e * twoI * D, e * twoI * D + I * D));
      at('up_proj.weight', [I, D], w13.subarray(e * twoI * D + I * D, (e + 1) * twoI * D));
      at('down_proj.weight', [D, I], w2.subarray(e * D * I, (e + 1) * D * I));
    }
  }
  if (config.tieWordEmbeddings) refs.set('lm_head.weight', refs.get('embed_tokens.weight')!);
  return { weights: Weights.from(refs), arrays };
}

/** A small Granite text config: GQA, biases, every multiplier away from 1, tied embeddings. */
export const tinyGraniteConfig: GraniteTextConfig = {
  hiddenSize: 32,
  numHiddenLayers: 2,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  headDim: 8,
  intermediateSize: 48,
  vocabSize: 40,
  rmsNormEps: 1e-5,
  ropeTheta: 10000,
  embeddingMultiplier: 3,
  attentionMultiplier: 0.3,
  residualMultiplier: 0.5,
  logitsScaling: 2,
  tieWordEmbeddings: true,
  attentionBias: true,
  mlpBias: true,
};

/** Random float32 weights N(0, 0.3) for every Granite parameter (lm_head tied), drawn in list order from `seed`. */
export function randomGraniteWeights(config: GraniteTextConfig, seed: number): Weights {
  const refs = new Map<string, TensorRef>();
  let k = seed;
  for (const p of graniteTextExpectedParameters(config)) {
    if (p.name === 'lm_head.weight') continue;
    const n = p.shape.reduce((a, b) => a * b, 1);
    refs.set(p.name, tensorFromArray('float32', p.shape, randn(n, k++, 0.3)));
  }
  return Weights.from(refs);
}
