import { type Graph, serializeModel, tensorFromArray, Weights } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';
import type { ErnieResamplerConfig } from '../config.js';
import { type GridThw, resamplerInputs } from '../inputs.js';
import { expectedParameters } from '../parameters.js';
import { RESAMPLER_IO } from '../resampler.js';
import type { Params } from './reference.js';

/** Builds, serialises and runs a graph on ORT's CPU EP. */
export async function runGraph(g: Graph, feeds: Record<string, ort.Tensor>): Promise<Record<string, ort.Tensor>> {
  const { bytes, externalData } = await serializeModel(g);
  const session = await ort.InferenceSession.create(bytes, { externalData, executionProviders: ['cpu'], logSeverityLevel: 3 });
  try {
    return await session.run(feeds);
  } finally {
    await session.release();
  }
}

/** The standalone model's feeds for `hidden` [Np, Dv] and the grids. */
export function resamplerFeeds(hidden: Float32Array, grids: readonly GridThw[], cfg: ErnieResamplerConfig): Record<string, ort.Tensor> {
  const idx = resamplerInputs(grids, cfg);
  const feeds: Record<string, ort.Tensor> = {
    [RESAMPLER_IO.visionHidden]: new ort.Tensor('float32', hidden, [idx.numPatches, cfg.visionHiddenSize]),
  };
  if (cfg.useTemporalConv) {
    feeds[RESAMPLER_IO.firstSlice] = new ort.Tensor('int64', idx.firstSlice, [idx.firstSlice.length]);
    feeds[RESAMPLER_IO.secondSlice] = new ort.Tensor('int64', idx.secondSlice, [idx.secondSlice.length]);
  }
  return feeds;
}

/** Deterministic N(0, 1) samples (LCG + Box-Muller). */
export function randn(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0;
  const next = () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return (s + 0.5) / 2 ** 32;
  };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = scale * Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next());
  return out;
}

/** Random parameters of the right shapes (fan-in scaled weights, norm weights near 1, random biases). */
export function randomParams(cfg: ErnieResamplerConfig, seed: number): { params: Params; weights: Weights } {
  const params: Params = {};
  expectedParameters(cfg).forEach((spec, k) => {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const isNormWeight = spec.name.endsWith('norm.weight');
    const data =
      spec.shape.length === 2
        ? randn(n, seed + k, 1 / Math.sqrt(spec.shape[1]!))
        : isNormWeight
          ? randn(n, seed + k, 0.1).map((v) => 1 + v)
          : randn(n, seed + k, 0.1);
    params[spec.name] = data;
  });
  const weights = Weights.from(
    Object.fromEntries(expectedParameters(cfg).map((s) => [s.name, tensorFromArray('float32', s.shape, params[s.name]!)])),
  );
  return { params, weights };
}

/** max |a - b| / max |b|: the error relative to the reference's scale. */
export function relMaxError(actual: ArrayLike<number>, expected: ArrayLike<number>): { maxAbs: number; rel: number } {
  if (actual.length !== expected.length) throw new Error(`length ${actual.length} != ${expected.length}`);
  let maxAbs = 0;
  let scale = 0;
  for (let i = 0; i < actual.length; i++) {
    maxAbs = Math.max(maxAbs, Math.abs(actual[i]! - expected[i]!));
    scale = Math.max(scale, Math.abs(expected[i]!));
  }
  return { maxAbs, rel: maxAbs / scale };
}
