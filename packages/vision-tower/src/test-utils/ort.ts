import { type Graph, serializeModel } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';
import { ERNIE_VISION_TOWER_INPUTS, ERNIE_VISION_TOWER_OUTPUTS } from '../ernie/vision-transformer.js';

/** Serialises `g` and opens a CPU session on it. */
export async function session(g: Graph, opts: { threads?: number } = {}): Promise<ort.InferenceSession> {
  const { bytes, externalData } = await serializeModel(g);
  return ort.InferenceSession.create(bytes, {
    externalData,
    executionProviders: ['cpu'],
    logSeverityLevel: 3,
    ...(opts.threads !== undefined ? { intraOpNumThreads: opts.threads } : {}),
  });
}

/** Runs the standalone ERNIE tower model. */
export async function runTower(
  s: ort.InferenceSession,
  pixelValues: Float32Array,
  patchDim: number,
  inputs: { rotaryCos: Float32Array; rotarySin: Float32Array; rotaryShape: [number, number]; segmentIds: Int32Array },
): Promise<Float32Array> {
  const n = inputs.segmentIds.length;
  const out = await s.run(
    ERNIE_VISION_TOWER_INPUTS.feeds<ort.Tensor>({
      pixel_values: new ort.Tensor('float32', pixelValues, [n, patchDim]),
      rotary_cos: new ort.Tensor('float32', inputs.rotaryCos, inputs.rotaryShape),
      rotary_sin: new ort.Tensor('float32', inputs.rotarySin, inputs.rotaryShape),
      segment_ids: new ort.Tensor('int32', inputs.segmentIds, [n]),
    }),
  );
  return out[ERNIE_VISION_TOWER_OUTPUTS.names.vision_hidden]!.data as Float32Array;
}

/** max |a - b| / max |b|: the error relative to the reference's scale. */
export function relMaxError(a: ArrayLike<number>, ref: ArrayLike<number>): number {
  if (a.length !== ref.length) throw new Error(`length ${a.length} != ${ref.length}`);
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    diff = Math.max(diff, Math.abs(a[i]! - ref[i]!));
    scale = Math.max(scale, Math.abs(ref[i]!));
  }
  return diff / scale;
}

/** Deterministic N(0, 1) samples (LCG + Box-Muller). */
export function randn(n: number, seed: number, std = 1): Float32Array {
  let s = seed >>> 0;
  const next = () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return (s + 0.5) / 2 ** 32;
  };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = std * Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next());
  return out;
}
