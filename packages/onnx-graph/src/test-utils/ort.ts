import ort from 'onnxruntime-node';
import type { Graph } from '../graph.js';
import { serializeModel } from '../model.js';
import { applyPasses, type GraphPass } from '../passes/rewrite.js';

export type Feed = { dtype: 'float32' | 'int64' | 'int32' | 'bool' | 'float16'; dims: number[]; data: ArrayLike<number> | BigInt64Array };

/** Builds, serialises and runs a graph on ORT's CPU EP; returns outputs by name. */
export async function runGraph(g: Graph, feeds: Record<string, Feed>): Promise<Record<string, ort.Tensor>> {
  const { bytes, externalData } = await serializeModel(g);
  const session = await ort.InferenceSession.create(bytes, { externalData, executionProviders: ['cpu'], logSeverityLevel: 3 });
  const ortFeeds: Record<string, ort.Tensor> = {};
  for (const [k, f] of Object.entries(feeds)) {
    const data =
      f.dtype === 'int64'
        ? f.data instanceof BigInt64Array
          ? f.data
          : BigInt64Array.from(Array.from(f.data as ArrayLike<number>, (v) => BigInt(v)))
        : f.dtype === 'float32'
          ? Float32Array.from(f.data as ArrayLike<number>)
          : f.dtype === 'int32'
            ? Int32Array.from(f.data as ArrayLike<number>)
            : f.dtype === 'float16'
              ? Uint16Array.from(f.data as ArrayLike<number>) // float16 bits (`floatData`)
              : Uint8Array.from(f.data as ArrayLike<number>);
    ortFeeds[k] = new ort.Tensor(f.dtype, data, f.dims);
  }
  try {
    return await session.run(ortFeeds);
  } finally {
    await session.release();
  }
}

export function randn(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const next = () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return (s + 0.5) / 2 ** 32;
  };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next());
  return out;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/**
 * The equivalence check every pass test makes: `build` twice, once left as built and once rewritten by
 * `passes`, both run on `feeds`; returns the rewrites made and each output's max |diff|.
 */
export async function passDiffs(
  build: () => Graph,
  passes: readonly GraphPass[],
  feeds: Record<string, Feed>,
): Promise<{ rewrites: Record<string, number>; diffs: Record<string, number> }> {
  const before = await runGraph(build(), feeds);
  const g = build();
  const rewrites = applyPasses(g, passes);
  const after = await runGraph(g, feeds);
  const diffs: Record<string, number> = {};
  for (const [name, t] of Object.entries(before)) {
    diffs[name] = maxAbsDiff(Array.from(t.data as ArrayLike<number>, Number), Array.from(after[name]!.data as ArrayLike<number>, Number));
  }
  return { rewrites, diffs };
}
