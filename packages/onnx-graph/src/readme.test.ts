import { createHash } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ort from 'onnxruntime-node';
import { describe, expect, it, vi } from 'vitest';
import { Graph, nn, saveModel, serializeModel, tensorFromArray, tensorFromSource, Weights } from './index.js';

/** erf to ~1e-7 (Abramowitz & Stegun 7.1.26), enough for a 1e-5 check of exact-erf Gelu. */
function erf(z: number): number {
  const t = 1 / (1 + 0.3275911 * Math.abs(z));
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return Math.sign(z) * (1 - poly * Math.exp(-z * z));
}

/** The example's model in plain TypeScript: layerNorm(gelu(x W^T + b)). */
function reference(x: Float32Array, rows: number, w: Float32Array, b: Float32Array, gamma: Float32Array, beta: Float32Array): Float32Array {
  const [n, d] = [16, 8];
  const out = new Float32Array(rows * n);
  for (let r = 0; r < rows; r++) {
    const h = Array.from({ length: n }, (_, o) => {
      let s = b[o]!;
      for (let i = 0; i < d; i++) s += x[r * d + i]! * w[o * d + i]!;
      return 0.5 * s * (1 + erf(s / Math.SQRT2));
    });
    const mean = h.reduce((a, v) => a + v, 0) / n;
    const variance = h.reduce((a, v) => a + (v - mean) ** 2, 0) / n;
    h.forEach((v, o) => {
      out[r * n + o] = ((v - mean) / Math.sqrt(variance + 1e-5)) * gamma[o]! + beta[o]!;
    });
  }
  return out;
}

describe('README example', () => {
  it('builds the example graph, saves it and runs it in ORT: outputs equal a TypeScript reference', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const self = await readFile(new URL(import.meta.url), 'utf8');
    const example = /```ts\n([\s\S]*?)```/.exec(readme)![1]!;
    for (const line of example.split('\n').map((l) => l.replace(/\s*\/\/.*$/, '').trim())) {
      if (line === '' || line.startsWith('import ') || line.startsWith('await saveModel')) continue;
      expect(self, `README line not in this test: ${line}`).toContain(line);
    }

    // The README's example, verbatim apart from the imports and the output path.
    const values = (n: number, scale: number) => Float32Array.from({ length: n }, (_, k) => Math.sin(k + 1) * scale);
    const weights = Weights.from({
      'fc1.weight': tensorFromArray('float32', [16, 8], values(128, 0.5)), // [out, in]
      'fc1.bias': tensorFromArray('float32', [16], values(16, 0.1)),
      'norm.weight': tensorFromArray('float32', [16], values(16, 1)),
      'norm.bias': tensorFromArray('float32', [16], values(16, 0.2)),
    });
    const g = new Graph();
    const x = g.input('x', 'float32', ['batch', 8]);
    const h = nn.linear(g, x, weights, 'fc1', { out: 16 }); // MatMul + Add, shape ['batch', 16]
    const y = nn.layerNorm(g, g.gelu(h), weights, 'norm', 1e-5);
    g.output(y, 'y');
    const path = join(await mkdtemp(join(tmpdir(), 'vlmkit-readme-')), 'model.onnx');
    await saveModel(g, path);

    expect(h.shape).toEqual(['batch', 16]);
    const input = Float32Array.from({ length: 3 * 8 }, (_, i) => Math.cos(i) * 2);
    const session = await ort.InferenceSession.create(path, { executionProviders: ['cpu'] });
    const out = await session.run({ x: new ort.Tensor('float32', input, [3, 8]) });
    await session.release();
    const got = out.y!.data as Float32Array;
    const want = reference(input, 3, values(128, 0.5), values(16, 0.1), values(16, 1), values(16, 0.2));
    expect(out.y!.dims).toEqual([3, 16]);
    // The outputs are O(1) and differ across features and rows, so a wrong layer anywhere shows.
    expect(Math.max(...Array.from(want, Math.abs))).toBeGreaterThan(0.5);
    expect(new Set(Array.from(want, (v) => v.toFixed(3))).size).toBeGreaterThan(40);
    let worst = 0;
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want[i]!));
    expect(worst).toBeLessThan(1e-5);
  });
});

describe('README browser example', () => {
  it('serialises a graph whose weight is read from a Blob, and hashes it as node:crypto does', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const block = /<!-- browser example:[^>]*-->\s*```ts\n([\s\S]*?)```/.exec(readme)![1]!;
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-readme-browser-'));
    const file = join(dir, 'example.ts');
    await writeFile(file, block.replace("'@vlmkit/onnx-graph'", JSON.stringify(fileURLToPath(new URL('./index.ts', import.meta.url)))));
    const calls: unknown[][] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void calls.push(args));
    try {
      await import(pathToFileURL(file).href);
    } finally {
      log.mockRestore();
    }

    // The same graph built here: its bytes are the example's (serialisation is deterministic).
    const blob = new Blob([Float32Array.of(1, 2, 3, 4, 5, 6)]);
    const read = async (offset: number, length: number) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer());
    const g = new Graph();
    const x = g.input('x', 'float32', ['batch', 2]);
    g.output(g.matmul(x, g.initializer('w', tensorFromSource('float32', [2, 3], { name: 'weights.bin', stamp: '24', read }, 0, 24))), 'y');
    const { bytes } = await serializeModel(g);
    expect(calls).toEqual([[bytes.byteLength, 0], [createHash('sha256').update(bytes).digest('hex')]]);
    const session = await ort.InferenceSession.create(bytes, { executionProviders: ['cpu'] });
    const out = await session.run({ x: new ort.Tensor('float32', Float32Array.of(1, 1, 0, 2), [2, 2]) });
    await session.release();
    // Row sums of w = [[1, 2, 3], [4, 5, 6]], then twice its second row.
    expect(Array.from(out.y!.data as Float32Array)).toEqual([5, 7, 9, 8, 10, 12]);
  });
});
