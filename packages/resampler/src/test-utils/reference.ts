/**
 * A plain-TypeScript transcription of HF 5.17's
 * Ernie4_5_VLMoeVariableResolutionResamplerModel.forward, in float64, for
 * tests only. Its slicing follows HF's loops literally (batch_offsets,
 * zip of the even/odd frame ranges) instead of calling resamplerInputs, so
 * it checks the index helper too.
 */
import type { ErnieResamplerConfig } from '../config.js';

export type Params = Record<string, Float32Array>;

export function referenceResampler(
  p: Params,
  cfg: ErnieResamplerConfig,
  hidden: Float32Array,
  grids: readonly (readonly number[])[],
): Float64Array {
  const s2 = cfg.spatialMergeSize ** 2;
  const dim = cfg.visionHiddenSize * s2;
  const rows = hidden.length / dim;
  let x: Float64Array = Float64Array.from(hidden); // reshape [-1, Dv*s^2] is a no-op on row-major data
  x = visionMlp(p, x, rows, dim, ['spatial_linear1', 'spatial_linear2', 'spatial_norm'], cfg.layerNormEps);
  let n = rows;
  if (cfg.useTemporalConv) {
    const first: number[] = [];
    const second: number[] = [];
    let batchOffset = 0;
    for (const [t, h, w] of grids as [number, number, number][]) {
      const spatial = (h * w) / s2;
      const evens = range(0, t, 2);
      const odds = range(t > 1 ? 1 : 0, t, 2);
      for (let k = 0; k < Math.min(evens.length, odds.length); k++) {
        for (let j = 0; j < spatial; j++) {
          first.push(batchOffset + evens[k]! * spatial + j);
          second.push(batchOffset + odds[k]! * spatial + j);
        }
      }
      batchOffset += (t * h * w) / s2;
    }
    n = first.length;
    const cat = new Float64Array(n * 2 * dim);
    for (let r = 0; r < n; r++) {
      cat.set(x.subarray(first[r]! * dim, (first[r]! + 1) * dim), r * 2 * dim);
      cat.set(x.subarray(second[r]! * dim, (second[r]! + 1) * dim), r * 2 * dim + dim);
    }
    x = visionMlp(p, cat, n, 2 * dim, ['temporal_linear1', 'temporal_linear2', 'temporal_norm'], cfg.layerNormEps);
  }
  const y = linear(p, 'mlp', x, n, dim, cfg.textHiddenSize);
  return rmsNorm(y, n, cfg.textHiddenSize, p['after_norm.weight']!, cfg.rmsNormEps);
}

function range(start: number, end: number, step: number): number[] {
  const out: number[] = [];
  for (let i = start; i < end; i += step) out.push(i);
  return out;
}

function visionMlp(p: Params, x: Float64Array, n: number, inDim: number, [fc1, fc2, norm]: string[], eps: number): Float64Array {
  const out = p[`${fc1}.bias`]!.length;
  const h = linear(p, fc1!, x, n, inDim, out).map(gelu);
  return layerNorm(linear(p, fc2!, h, n, out, out), n, out, p[`${norm}.weight`]!, p[`${norm}.bias`]!, eps);
}

/** y = x W^T + b, W [out, in]. */
function linear(p: Params, name: string, x: Float64Array, n: number, inDim: number, out: number): Float64Array {
  const w = p[`${name}.weight`]!;
  const b = p[`${name}.bias`]!;
  const y = new Float64Array(n * out);
  for (let r = 0; r < n; r++) {
    for (let o = 0; o < out; o++) {
      let acc = b[o]!;
      for (let i = 0; i < inDim; i++) acc += x[r * inDim + i]! * w[o * inDim + i]!;
      y[r * out + o] = acc;
    }
  }
  return y;
}

/** torch.nn.GELU(): x * Phi(x) with the exact erf. */
function gelu(x: number): number {
  return 0.5 * x * (1 + erf(x / Math.SQRT2));
}

/** erf to ~1e-15 (series for small |x|, continued fraction of erfc beyond). */
function erf(x: number): number {
  const a = Math.abs(x);
  if (a < 2.5) {
    let term = a;
    let sum = a;
    for (let k = 1; k < 200; k++) {
      term *= (-a * a) / k;
      const add = term / (2 * k + 1);
      sum += add;
      if (Math.abs(add) < 1e-17) break;
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc(a) = exp(-a^2)/sqrt(pi) * 1/(a + 1/2/(a + 1/(a + 3/2/(a + ...)))), evaluated backwards.
  let f = 0;
  for (let k = 60; k >= 1; k--) f = k / 2 / (a + f);
  const erfc = Math.exp(-a * a) / Math.sqrt(Math.PI) / (a + f);
  return Math.sign(x) * (1 - erfc);
}

function layerNorm(x: Float64Array, n: number, d: number, w: Float32Array, b: Float32Array, eps: number): Float64Array {
  const y = new Float64Array(n * d);
  for (let r = 0; r < n; r++) {
    const row = x.subarray(r * d, (r + 1) * d);
    const mean = row.reduce((a, v) => a + v, 0) / d;
    const variance = row.reduce((a, v) => a + (v - mean) ** 2, 0) / d;
    const inv = 1 / Math.sqrt(variance + eps);
    for (let i = 0; i < d; i++) y[r * d + i] = (row[i]! - mean) * inv * w[i]! + b[i]!;
  }
  return y;
}

function rmsNorm(x: Float64Array, n: number, d: number, w: Float32Array, eps: number): Float64Array {
  const y = new Float64Array(n * d);
  for (let r = 0; r < n; r++) {
    const row = x.subarray(r * d, (r + 1) * d);
    const inv = 1 / Math.sqrt(row.reduce((a, v) => a + v * v, 0) / d + eps);
    for (let i = 0; i < d; i++) y[r * d + i] = row[i]! * inv * w[i]!;
  }
  return y;
}
