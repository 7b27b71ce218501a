import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, realpath, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import { relocateExternalData } from './model.js';
import * as nn from './nn.js';
import { loadModelProto, saveModel } from './save-model.node.js';
import { lazyTensor, tensorFromFile } from './tensor-ref.js';
import { maxAbsDiff, randn } from './test-utils/ort.js';
import { Weights } from './weights.js';

async function runFile(path: string | Uint8Array, x: Float32Array, dims: number[], folder?: string): Promise<Float32Array> {
  const extra = folder === undefined ? {} : { extra: { session: { model_external_initializers_file_folder_path: folder } } };
  const s = await (typeof path === 'string'
    ? ort.InferenceSession.create(path, { executionProviders: ['cpu'], logSeverityLevel: 3 })
    : ort.InferenceSession.create(path, { executionProviders: ['cpu'], logSeverityLevel: 3, ...extra }));
  try {
    const out = await s.run({ x: new ort.Tensor('float32', x, dims) });
    return out.y!.data as Float32Array;
  } finally {
    await s.release();
  }
}

describe('saveModel', () => {
  it('references a checkpoint file in another folder in place (relocated for ORT), copies transformed tensors', async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), 'vlmkit-save-')));
    const [src, dir] = [join(root, 'checkpoint'), join(root, 'cache')];
    await mkdir(src);
    await mkdir(dir);
    // A file laid out like a safetensors data section: 13 junk bytes, then the tensor (unaligned on purpose).
    const w = randn(64 * 32, 41);
    const file = join(src, 'weights.bin');
    const bytes = new Uint8Array(13 + w.byteLength);
    bytes.set(new Uint8Array(w.buffer), 13);
    await writeFile(file, bytes);
    const b = randn(64, 42);
    const weights = Weights.from({
      'fc.weight': tensorFromFile('F32', [64, 32], file, 13, w.byteLength),
      // A "transformed" tensor: produced at save time, written to the model's data file.
      'fc.bias': lazyTensor('float32', [64], async () => b.map((v) => v * 2)),
    });
    const g = new Graph();
    const x = g.input('x', 'float32', ['n', 32]);
    g.output(nn.linear(g, x, weights, 'fc', { out: 64 }), 'y');
    const references = new Map([[file, 'checkpoint:weights.bin']]);
    const saved = await saveModel(g, join(dir, 'model.onnx'), { externalThreshold: 128, references });
    expect(saved.referencedBytes).toBe(w.byteLength);
    expect(saved.copiedBytes).toBe(64 * 4);

    const proto = await loadModelProto(join(dir, 'model.onnx'));
    const init = proto.graph!.initializer!.find((t) => t.name === 'fc.weight')!;
    expect(Object.fromEntries(init.externalData!.map((e) => [e.key, e.value]))).toEqual({
      location: 'checkpoint:weights.bin',
      offset: '13',
      length: String(w.byteLength),
    });
    // ORT resolves every location against one folder: both files named relative to their common parent.
    const model = relocateExternalData(await readFile(join(dir, 'model.onnx')), (l) =>
      l === 'checkpoint:weights.bin' ? relative(root, file) : `cache/${l}`,
    );

    const xs = randn(3 * 32, 43);
    const y = await runFile(model, xs, [3, 32], root);
    const ref = new Float32Array(3 * 64);
    for (let i = 0; i < 3; i++)
      for (let j = 0; j < 64; j++) {
        let s = 2 * b[j]!;
        for (let t = 0; t < 32; t++) s += xs[i * 32 + t]! * w[j * 32 + t]!;
        ref[i * 64 + j] = s;
      }
    expect(maxAbsDiff(y, ref)).toBeLessThan(1e-4);
  });

  it('copies file tensors not named in references and writes the same bytes twice', async () => {
    const src = await mkdtemp(join(tmpdir(), 'vlmkit-src-'));
    const out = await mkdtemp(join(tmpdir(), 'vlmkit-out-'));
    const w = randn(16 * 16, 44);
    await writeFile(join(src, 'w.bin'), new Uint8Array(w.buffer));
    const build = () => {
      const g = new Graph();
      const x = g.input('x', 'float32', ['n', 16]);
      const weights = Weights.from({ 'fc.weight': tensorFromFile('float32', [16, 16], join(src, 'w.bin'), 0, w.byteLength) });
      g.output(nn.linear(g, x, weights, 'fc', { bias: false, out: 16 }), 'y');
      return g;
    };
    const a = await saveModel(build(), join(out, 'a.onnx'), { externalThreshold: 16 });
    const b = await saveModel(build(), join(out, 'b.onnx'), { externalThreshold: 16, dataFile: 'a.onnx.data' });
    expect(a.referencedBytes).toBe(0);
    expect(a.copiedBytes).toBe(w.byteLength);
    expect(b.copiedBytes).toBe(a.copiedBytes);
    expect(Buffer.compare(await readFile(join(out, 'a.onnx')), await readFile(join(out, 'b.onnx')))).toBe(0);
    const y = await runFile(join(out, 'a.onnx'), new Float32Array(16).fill(1), [1, 16]);
    expect(y[0]).toBeCloseTo(
      w.slice(0, 16).reduce((s, v) => s + v, 0),
      4,
    );
  });

  it('hashData: the data file is hashed as it is written, page-alignment gaps included', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-hash-'));
    const g = new Graph();
    const x = g.input('x', 'float32', ['n', 256]);
    // A small tensor, then one of 1 MiB that starts on the next 4 KiB page: a gap of zeros between.
    const weights = Weights.from({
      'a.weight': lazyTensor('float32', [4, 256], async () => randn(4 * 256, 45)),
      'b.weight': lazyTensor('float32', [1024, 256], async () => randn(1024 * 256, 46)),
    });
    g.output(nn.linear(g, x, weights, 'a', { bias: false, out: 4 }), 'y');
    g.output(nn.linear(g, x, weights, 'b', { bias: false, out: 1024 }), 'z');
    const saved = await saveModel(g, join(dir, 'm.onnx'), { hashData: true });
    const bytes = await readFile(saved.dataPath!);
    expect(saved.dataSha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  // 3 GiB of initializers: over the 2 GB protobuf limit. Slow (minutes, ~8 GB RAM): VLMKIT_BIG_TEST=1 to run.
  it.runIf(process.env.VLMKIT_BIG_TEST === '1')(
    'a model with more than 2 GB of initializers saves with external data and runs',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'vlmkit-big-'));
      const n = 16384;
      const value = (layer: number, i: number, j: number) => (((i * 31 + j * 17 + layer * 7) % 13) - 6) / (13 * 64);
      const entries: Record<string, ReturnType<typeof lazyTensor>> = {};
      for (let l = 0; l < 3; l++) {
        entries[`layers.${l}.weight`] = lazyTensor('float32', [n, n], async () => {
          const a = new Float32Array(n * n);
          for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) a[i * n + j] = value(l, i, j);
          return a;
        });
      }
      const weights = Weights.from(entries);
      const g = new Graph();
      let h = g.input('x', 'float32', [1, n]);
      for (let l = 0; l < 3; l++) h = nn.linear(g, h, weights, `layers.${l}`, { bias: false, out: n });
      g.output(h, 'y');
      const saved = await saveModel(g, join(dir, 'big.onnx'));
      expect(saved.copiedBytes).toBeGreaterThan(2 ** 31);
      expect((await stat(join(dir, 'big.onnx'))).size).toBeLessThan(1e6);
      const x = Float32Array.from({ length: n }, (_, i) => ((i % 7) - 3) / 7);
      const y = await runFile(join(dir, 'big.onnx'), x, [1, n]);
      let ref = Float64Array.from(x);
      for (let l = 0; l < 3; l++) {
        const next = new Float64Array(n);
        for (let i = 0; i < n; i++) {
          let s = 0;
          for (let j = 0; j < n; j++) s += ref[j]! * value(l, i, j);
          next[i] = s;
        }
        ref = next;
      }
      const scale = Math.max(...Array.from(ref, Math.abs));
      expect(maxAbsDiff(y, Array.from(ref)) / scale).toBeLessThan(1e-4);
    },
    1_800_000,
  );
});
