// serializeModel: the model in memory, written piece by piece, is protobufjs' encoding of the same model
// byte for byte; tensors of every kind (data, lazy, file, source) are read once, in place; large ones go to
// external buffers; a model over protobuf's limit is refused before any weight is read.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { GraphError } from './errors.js';
import { Graph } from './graph.js';
import { encode, externalTensor, inlineTensor, modelBytes, serializeModel, serializeWith } from './model.js';
import * as nn from './nn.js';
import * as browser from './platform.browser.js';
import * as node from './platform.node.js';
import { onnx } from './proto.js';
import type { FileRead } from './read-observer.js';
import { observeFileReads } from './read-observer.node.js';
import { saveModel } from './save-model.node.js';
import { tensorBytes } from './tensor-bytes.js';
import { lazyTensor, type RangeSource, tensorFromArray, tensorFromFile, tensorFromSafetensors, tensorFromSource } from './tensor-ref.js';
import { randn } from './test-utils/ort.js';
import { Weights } from './weights.js';

/** A RangeSource over bytes in memory that counts its reads. */
function memorySource(name: string, bytes: Uint8Array): RangeSource & { reads: [number, number][] } {
  const reads: [number, number][] = [];
  return {
    name,
    stamp: `${bytes.byteLength}`,
    reads,
    read: async (offset, length) => {
      reads.push([offset, length]);
      return bytes.slice(offset, offset + length);
    },
  };
}

/** x [1, 8] -> softmax(x @ w1 + b) @ w2 with w1 from a file, b from a source, w2 lazy, plus a data scale. */
async function build(): Promise<{ g: Graph; source: ReturnType<typeof memorySource>; loads: () => number; file: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-serialize-'));
  const w1 = randn(8 * 16, 1);
  const file = join(dir, 'w1.bin');
  const padded = new Uint8Array(5 + w1.byteLength);
  padded.set(new Uint8Array(w1.buffer), 5);
  await writeFile(file, padded);
  const bias = randn(16, 2);
  const blob = new Uint8Array(3 + bias.byteLength);
  blob.set(new Uint8Array(bias.buffer), 3);
  const source = memorySource('https://example.test/b.safetensors', blob);
  let loads = 0;
  const w2 = randn(16 * 4, 3);
  const g = new Graph({ name: 'serialize' });
  const x = g.input('x', 'float32', [1, 8]);
  const h = g.add(
    g.matmul(x, g.initializer('w1', tensorFromFile('float32', [8, 16], file, 5, w1.byteLength))),
    g.initializer('b', tensorFromSource('float32', [16], source, 3, bias.byteLength)),
  );
  const p = g.softmax(h, -1);
  const lazy = lazyTensor('float32', [16, 4], async () => {
    loads++;
    return w2;
  });
  const y = g.mul(
    g.matmul(p, g.initializer('w2', lazy)),
    g.initializer('scale', tensorFromArray('float32', [4], Float32Array.of(1, 2, 3, 4))),
  );
  g.output(y, 'y');
  return { g, source, loads: () => loads, file };
}

async function run(bytes: Uint8Array, externalData: { path: string; data: Uint8Array }[], x: Float32Array): Promise<Float32Array> {
  const s = await ort.InferenceSession.create(bytes, { externalData, executionProviders: ['cpu'], logSeverityLevel: 3 });
  try {
    return (await s.run({ x: new ort.Tensor('float32', x, [1, 8]) })).y!.data as Float32Array;
  } finally {
    await s.release();
  }
}

describe('serializeModel', () => {
  it("writes protobufjs' bytes of the same model, inline and external, reading each tensor once", async () => {
    const { g, source, loads } = await build();
    const inline = await serializeModel(g);
    expect(inline.externalData).toEqual([]);
    const snap = g.snapshot();
    const whole = encode(g, await Promise.all(snap.initializers.map(async (e) => inlineTensor(e, await tensorBytes(e.ref)))));
    expect(Buffer.from(inline.bytes).equals(Buffer.from(whole))).toBe(true);
    expect(source.reads).toEqual([
      [3, 64],
      [3, 64],
    ]); // one for serializeModel, one for the reference encoding above
    expect(loads()).toBe(2);

    // 64 bytes and more external: w1 (512), b (64), w2 (256); scale (16) stays inline.
    const split = await serializeModel(g, { externalThreshold: 64 });
    expect(split.externalData.map((e) => [e.path, e.data.byteLength])).toEqual([
      ['initializer_0.bin', 512],
      ['initializer_1.bin', 64],
      ['initializer_2.bin', 256],
    ]);
    const tensors = await Promise.all(
      snap.initializers.map(async (e, i) => {
        const bytes = await tensorBytes(e.ref);
        return bytes.byteLength >= 64 ? externalTensor(e, `initializer_${i}.bin`, 0, bytes.byteLength) : inlineTensor(e, bytes);
      }),
    );
    expect(Buffer.from(split.bytes).equals(Buffer.from(encode(g, tensors)))).toBe(true);

    // Both run, and give what the model saved to disk gives, bit for bit.
    const x = randn(8, 4);
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-serialize-save-'));
    await saveModel(g, join(dir, 'm.onnx'), { externalThreshold: 64 });
    const s = await ort.InferenceSession.create(join(dir, 'm.onnx'), { executionProviders: ['cpu'], logSeverityLevel: 3 });
    const saved = (await s.run({ x: new ort.Tensor('float32', x, [1, 8]) })).y!.data as Float32Array;
    await s.release();
    expect(await run(inline.bytes, [], x)).toEqual(saved);
    expect(await run(split.bytes, split.externalData, x)).toEqual(saved);
  });

  it('folds like saveModel when asked: a transposed linear weight becomes one float32 initializer', async () => {
    const g = new Graph({ name: 'fold' });
    const w = tensorFromArray('float32', [4, 8], randn(32, 5));
    const y = nn.linear(g, g.input('x', 'float32', [1, 8]), Weights.from({ 'fc.weight': w }), 'fc', { out: 4, bias: false });
    g.output(y, 'y');
    const plain = onnx.ModelProto.decode((await serializeModel(g)).bytes);
    const folded = onnx.ModelProto.decode((await serializeModel(g, { fold: true })).bytes);
    expect(plain.graph!.node!.some((n) => n.opType === 'Transpose')).toBe(true);
    expect(folded.graph!.node!.some((n) => n.opType === 'Transpose')).toBe(false);
    const x = randn(8, 6);
    const out = async (bytes: Uint8Array) => {
      const s = await ort.InferenceSession.create(bytes, { executionProviders: ['cpu'], logSeverityLevel: 3 });
      const r = (await s.run({ x: new ort.Tensor('float32', x, [1, 8]) })).y!.data;
      await s.release();
      return r;
    };
    expect(await out((await serializeModel(g, { fold: true })).bytes)).toEqual(await out(await modelBytes(g)));
  });

  it('by default keeps a small model inline in Node, and gives the browser every tensor of 1 MiB and more apart', async () => {
    const g = new Graph({ name: 'defaults' });
    const big = g.initializer('big', tensorFromArray('float32', [512, 512], randn(512 * 512, 8))); // 1 MiB
    const small = g.initializer('small', tensorFromArray('float32', [512], randn(512, 9)));
    g.output(g.add(g.matmul(g.input('x', 'float32', [1, 512]), big), small), 'y');
    const inNode = await serializeModel(g);
    expect(inNode).toEqual(await serializeWith(g, {}, node.SERIALIZE_INLINE_BELOW));
    expect(inNode.externalData).toEqual([]);
    const inPage = await serializeWith(g, {}, browser.SERIALIZE_INLINE_BELOW);
    expect(inPage.externalData.map((e) => [e.path, e.data.byteLength])).toEqual([['initializer_0.bin', 2 ** 20]]);
    const x = randn(512, 10);
    const run = async (m: typeof inNode) => {
      const s = await ort.InferenceSession.create(m.bytes, {
        externalData: m.externalData,
        executionProviders: ['cpu'],
        logSeverityLevel: 3,
      });
      const y = (await s.run({ x: new ort.Tensor('float32', x, [1, 512]) })).y!.data;
      await s.release();
      return y;
    };
    expect(await run(inPage)).toEqual(await run(inNode));
  });

  it("refuses a model over protobuf's 2 GiB limit before reading a weight", async () => {
    const g = new Graph({ name: 'big' });
    let loaded = false;
    const big = lazyTensor('float32', [2 ** 29], async () => {
      loaded = true;
      return new Float32Array(2 ** 29);
    });
    g.output(g.add(g.input('x', 'float32', [2 ** 29]), g.initializer('w', big)), 'y');
    const err = await serializeModel(g, { externalThreshold: Number.POSITIVE_INFINITY }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GraphError);
    expect(err).toMatchObject({ code: 'MODEL_TOO_LARGE', message: expect.stringMatching(/externalThreshold/) });
    expect(loaded).toBe(false);
  });
});

describe('source tensors', () => {
  it('are read through their source, reported as reads of it, and streamed by saveModel', async () => {
    const { g, source, file } = await build();
    const reads: FileRead[] = [];
    await observeFileReads(
      (r) => reads.push(r),
      () => serializeModel(g),
    );
    expect(reads.map((r) => [r.path, r.byteOffset, r.byteLength])).toEqual([
      [file, 5, 512],
      ['https://example.test/b.safetensors', 3, 64],
    ]);
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-source-save-'));
    source.reads.length = 0;
    await saveModel(g, join(dir, 'm.onnx'), { externalThreshold: 64 });
    expect(source.reads).toEqual([[3, 64]]);
    const data = await readFile(join(dir, 'm.onnx.data'));
    const proto = onnx.ModelProto.decode(await readFile(join(dir, 'm.onnx')));
    const b = proto.graph!.initializer!.find((t) => t.name === 'b')!;
    const offset = Number(b.externalData!.find((e) => e.key === 'offset')!.value);
    expect(new Uint8Array(data.subarray(offset, offset + 64))).toEqual(await tensorBytes(g.snapshot().initializers[1]!.ref));
  });

  it('come from a safetensors entry that carries its source; an entry with only a path stays a file tensor', () => {
    const source = memorySource('blob:model.safetensors', new Uint8Array(100));
    const entry = { dtype: 'F32', shape: [2, 3], file: 'model.safetensors', byteOffset: 40, byteLength: 24 };
    expect(tensorFromSafetensors({ ...entry, source })).toMatchObject({ kind: 'source', source, byteOffset: 40, byteLength: 24 });
    expect(tensorFromSafetensors(entry)).toMatchObject({ kind: 'file', path: 'model.safetensors' });
    expect(() => tensorFromSource('float32', [2, 3], source, 40, 20)).toThrow(/needs 24/);
  });
});
