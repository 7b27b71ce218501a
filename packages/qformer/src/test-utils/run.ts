import { type Graph, serializeModel } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';

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

export function f32(data: Float32Array, dims: readonly number[]): ort.Tensor {
  return new ort.Tensor('float32', data, [...dims]);
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
