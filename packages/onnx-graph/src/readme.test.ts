import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { Graph, nn, saveModel, tensorFromArray, Weights } from './index.js';

describe('README example', () => {
  it('builds the example graph, saves it and runs it in ORT', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    expect(readme).toContain("const h = nn.linear(g, x, weights, 'fc1');");

    const weights = Weights.from({
      'fc1.weight': tensorFromArray('float32', [16, 8], new Float32Array(128).fill(0.01)),
      'fc1.bias': tensorFromArray('float32', [16], new Float32Array(16)),
      'norm.weight': tensorFromArray('float32', [16], new Float32Array(16).fill(1)),
      'norm.bias': tensorFromArray('float32', [16], new Float32Array(16)),
    });
    const g = new Graph();
    const x = g.input('x', 'float32', ['batch', 8]);
    const h = nn.linear(g, x, weights, 'fc1');
    expect(h.shape).toEqual(['batch', 16]);
    const y = nn.layerNorm(g, g.gelu(h), weights, 'norm', 1e-5);
    g.output(y, 'y');
    const path = join(await mkdtemp(join(tmpdir(), 'vlmkit-readme-')), 'model.onnx');
    await saveModel(g, path);

    const session = await ort.InferenceSession.create(path, { executionProviders: ['cpu'] });
    const out = await session.run({
      x: new ort.Tensor(
        'float32',
        Float32Array.from({ length: 16 }, (_, i) => i),
        [2, 8],
      ),
    });
    await session.release();
    // Every fc1 output of a row is equal (constant weights), so the layer norm gives zeros.
    expect(out.y!.dims).toEqual([2, 16]);
    expect(Math.max(...Array.from(out.y!.data as Float32Array, Math.abs))).toBeLessThan(1e-3);
  });
});
