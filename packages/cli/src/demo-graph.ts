import { Graph, nn, serializeModel, tensorFromArray, Weights } from '@vlmkit/onnx-graph';
import { createSession, type DeviceRequest, float32 } from '@vlmkit/runtime';

export interface GraphDemoResult {
  device: string;
  deviceReason: string;
  output: Float32Array;
  buildMs: number;
  runMs: number;
}

/** Builds a two-layer MLP with a layer norm in TypeScript and runs it: the smallest end-to-end check of the toolchain. */
export async function runGraphDemo(device: DeviceRequest = 'auto'): Promise<GraphDemoResult> {
  const t0 = performance.now();
  const d = 8;
  const ramp = (n: number, scale: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) * scale);
  const weights = Weights.from({
    'fc1.weight': tensorFromArray('float32', [2 * d, d], ramp(2 * d * d, 0.3)),
    'fc1.bias': tensorFromArray('float32', [2 * d], ramp(2 * d, 0.1)),
    'fc2.weight': tensorFromArray('float32', [d, 2 * d], ramp(2 * d * d, 0.2)),
    'norm.weight': tensorFromArray('float32', [d], new Float32Array(d).fill(1)),
    'norm.bias': tensorFromArray('float32', [d], new Float32Array(d)),
  });
  const g = new Graph({ name: 'demo' });
  const x = g.input('x', 'float32', ['batch', d]);
  const h = g.gelu(nn.linear(g, x, weights, 'fc1', { out: 2 * d }));
  g.output(nn.layerNorm(g, nn.linear(g, h, weights, 'fc2', { bias: false, out: d }), weights, 'norm', 1e-5), 'y');
  const { bytes, externalData } = await serializeModel(g);
  const t1 = performance.now();
  const session = await createSession(bytes, { device, externalData, name: 'demo' });
  try {
    const out = await session.run({ x: float32(ramp(2 * d, 1), [2, d]) });
    const t2 = performance.now();
    return {
      device: session.device,
      deviceReason: session.deviceReason,
      output: out.y!.data as Float32Array,
      buildMs: t1 - t0,
      runMs: t2 - t1,
    };
  } finally {
    await session.release();
  }
}
