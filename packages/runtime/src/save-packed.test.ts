import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, ortSessionOptions } from './session.js';
import { float32 } from './tensor.js';
import { float32Init, modelBytes, node, valueInfo } from './test-utils/onnx-models.js';

// A weight over 1 MiB, so that it goes to the data file.
const K = 768;
const N = 512;
/** y = x W with a [K, N] constant W: a weight ORT's CPU MatMul prepacks. */
function matmulModel(): Uint8Array {
  const w = Array.from({ length: K * N }, (_, i) => Math.sin(i * 0.37) * 0.1);
  return modelBytes({
    name: 'matmul',
    nodes: [node('MatMul', 'mm', ['x', 'w'], ['y'])],
    inputs: [valueInfo('x', 'float32', ['m', K])],
    outputs: [valueInfo('y', 'float32', ['m', N])],
    initializers: [float32Init('w', [K, N], w)],
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vlmkit-save-packed-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('savePacked: the model with its packed weights written beside it', () => {
  it('reaches ORT as the optimized model path and the prepacked-initializer options', () => {
    const o = ortSessionOptions({ prepack: true, savePacked: { modelPath: '/c/m.packed.onnx', dataFile: 'm.packed.data' } }, false);
    expect(o.optimizedModelFilePath).toBe('/c/m.packed.onnx');
    expect(o.extra).toEqual({
      session: {
        save_external_prepacked_constant_initializers: '1',
        optimized_model_external_initializers_file_name: 'm.packed.data',
        optimized_model_external_initializers_min_size_in_bytes: '1048577',
      },
    });
  });

  it('a session from the written model gives the same numbers, its weights (packed copies included) in the data file', async () => {
    const x = float32(
      Array.from({ length: 3 * K }, (_, i) => Math.cos(i)),
      [3, K],
    );
    const plain = await createSession(matmulModel(), { device: 'cpu', prepack: true });
    const want = (await plain.run({ x })).y!.data as Float32Array;
    await plain.release();

    const modelPath = join(dir, 'm.packed.onnx');
    const writer = await createSession(matmulModel(), {
      device: 'cpu',
      prepack: true,
      savePacked: { modelPath, dataFile: 'm.packed.data' },
    });
    expect((await writer.run({ x })).y!.data).toEqual(want);
    await writer.release();
    expect((await readdir(dir)).sort()).toEqual(['m.packed.data', 'm.packed.onnx']);
    // The weight (K x N float32) and ORT's packed copy of it: more than the weight alone.
    expect((await stat(join(dir, 'm.packed.data'))).size).toBeGreaterThan(K * N * 4);

    const reloaded = await createSession(modelPath, { device: 'cpu', prepack: true });
    expect((await reloaded.run({ x })).y!.data).toEqual(want);
    await reloaded.release();
  });
});
