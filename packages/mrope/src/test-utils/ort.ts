import { type Graph, serializeModel } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';

/** Serialises `g`, runs it once on ORT's CPU EP with float32 feeds, returns the outputs' data. */
export async function runF32(
  g: Graph,
  feeds: Record<string, { dims: number[]; data: Float32Array }>,
): Promise<Record<string, Float32Array>> {
  const { bytes, externalData } = await serializeModel(g);
  const session = await ort.InferenceSession.create(bytes, { externalData, executionProviders: ['cpu'], logSeverityLevel: 3 });
  try {
    const inputs = Object.fromEntries(Object.entries(feeds).map(([k, f]) => [k, new ort.Tensor('float32', f.data, f.dims)]));
    const out = await session.run(inputs);
    return Object.fromEntries(Object.entries(out).map(([k, t]) => [k, t.data as Float32Array]));
  } finally {
    await session.release();
  }
}

/** Deterministic values in [-1, 1). */
export function noise(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}
