import { createHash } from 'node:crypto';
import { mkdtemp, open, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Graph } from './graph.js';
import { saveModel } from './save-model.node.js';
import { lazyTensor } from './tensor-ref.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vlmkit-save-chunks-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('saveModel writes a computed tensor in bounded pieces', () => {
  it('a lazy tensor larger than one write piece (64 MiB) lands whole, hashed as written', async () => {
    // 150 MiB: three pieces. One write (and one hash update) takes at most 2 GiB, and computed tensors can be
    // larger (stacked MoE expert weights), so the writer never hands over a tensor in one call.
    const n = 150 * 2 ** 20;
    const pattern = (i: number) => (i * 31 + (i >>> 20)) & 0xff;
    const g = new Graph();
    const big = g.initializer(
      'big',
      lazyTensor('uint8', [n], async () => Uint8Array.from({ length: n }, (_, i) => pattern(i))),
    );
    g.output(g.cast(big, 'float32'), 'y');
    const saved = await saveModel(g, join(dir, 'm.onnx'), { hashData: true });
    const data = await readFile(saved.dataPath!);
    expect(data.byteLength).toBe(n);
    for (const i of [0, 1, 2 ** 26 - 1, 2 ** 26, 2 ** 27 + 12345, n - 1]) expect(data[i]).toBe(pattern(i));
    expect(saved.dataSha256).toBe(createHash('sha256').update(data).digest('hex'));
  });

  it('a computed tensor over 2 GiB, more than one write can take, is written', async () => {
    const n = 2 ** 31 + 4096;
    const marks = [0, 2 ** 26 + 7, 2 ** 31 - 1, 2 ** 31, n - 1];
    const g = new Graph();
    const big = g.initializer(
      'big',
      lazyTensor('uint8', [n], async () => {
        const a = new Uint8Array(n);
        for (const [k, i] of marks.entries()) a[i] = k + 1;
        return a;
      }),
    );
    g.output(g.cast(big, 'float32'), 'y');
    const saved = await saveModel(g, join(dir, 'huge.onnx'));
    expect((await stat(saved.dataPath!)).size).toBe(n);
    const fh = await open(saved.dataPath!, 'r');
    try {
      for (const [k, i] of marks.entries()) {
        const b = new Uint8Array(1);
        await fh.read(b, 0, 1, i);
        expect(b[0]).toBe(k + 1);
      }
    } finally {
      await fh.close();
    }
    await rm(saved.dataPath!);
  });
});
