import { type Graph, serializeModel } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';

export type Feed = { dtype: 'float32' | 'int64' | 'bool'; dims: number[]; data: Float32Array | BigInt64Array | Uint8Array };

/** A built graph as an ORT CPU session (weights handed over as external buffers). */
export async function sessionFor(g: Graph): Promise<ort.InferenceSession> {
  const { bytes, externalData } = await serializeModel(g);
  return ort.InferenceSession.create(bytes, { externalData, executionProviders: ['cpu'], logSeverityLevel: 3 });
}

export async function run(session: ort.InferenceSession, feeds: Record<string, Feed>): Promise<Record<string, ort.Tensor>> {
  const t: Record<string, ort.Tensor> = {};
  for (const [k, f] of Object.entries(feeds)) t[k] = new ort.Tensor(f.dtype, f.data, f.dims);
  return session.run(t);
}

export const f32 = (dims: number[], data: Float32Array): Feed => ({ dtype: 'float32', dims, data });
export const i64 = (dims: number[], data: ArrayLike<number> | BigInt64Array): Feed => ({
  dtype: 'int64',
  dims,
  data: data instanceof BigInt64Array ? data : BigInt64Array.from(Array.from(data, (v) => BigInt(v))),
});

/** Deterministic N(0, 1) samples (LCG + Box-Muller). */
export function randn(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 0.5) / 2 ** 32;
  };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = scale * Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next());
  return out;
}

/** max |a - b| over the elements where `keep(i)` holds. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>, keep: (i: number) => boolean = () => true): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) if (keep(i)) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

export function maxAbs(a: ArrayLike<number>, keep: (i: number) => boolean = () => true): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) if (keep(i)) m = Math.max(m, Math.abs(a[i]!));
  return m;
}
