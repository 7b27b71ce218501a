import { mkdir, mkdtemp, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPasses, deferPasses, Graph, nn, quantizeLinearPass, tensorFromSafetensors, Weights } from '@vlmkit/onnx-graph';
import { float32 } from '@vlmkit/runtime';
import { Checkpoint, writeSafetensors } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ernie45VL } from './ernie/model.js';
import { packedFor } from './packed-weights.node.js';
import { cachedSession, type SessionCacheOptions } from './session-cache.node.js';
import { FIXTURES, fixtureCases, readTensors } from './test-utils/fixtures.js';

// One int4 Linear of 2048 x 2048: its MatMulNBits blocks (2 MiB) are over the 1 MiB a packed copy maps.
const K = 2048;
let work: string;
let dir: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'vlmkit-packed-'));
  dir = join(work, 'checkpoint');
  await mkdir(dir);
  const w = new Float32Array(K * K).map((_, i) => Math.sin(i * 0.618) * 0.05);
  await writeSafetensors(join(dir, 'model.safetensors'), { 'fc.weight': { dtype: 'F32', shape: [K, K], data: w } });
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function run(o: SessionCacheOptions, at = { dir: '', k: K }): Promise<{ y: Float32Array; cached: boolean }> {
  const k = at.k;
  const from = at.dir || dir;
  const ckpt = await Checkpoint.open(from);
  const graph = deferPasses(() => {
    const g = new Graph();
    const weights = Weights.from({ 'fc.weight': tensorFromSafetensors(ckpt.info('fc.weight')) });
    g.output(nn.linear(g, g.input('x', 'float32', ['m', k]), weights, 'fc', { bias: false, out: k }), 'y');
    applyPasses(g, [quantizeLinearPass({ bits: 4, accuracyLevel: 4 })]);
    return g;
  });
  const built = await cachedSession(graph, from, 'fc', o);
  await ckpt.close();
  const x = float32(
    Array.from({ length: 3 * k }, (_, i) => Math.cos(i * 0.1)),
    [3, k],
  );
  const y = (await built.session.run({ x })).y!.data as Float32Array;
  await built.session.release();
  return { y, cached: built.cached };
}

const entryOf = async (cacheDir: string) => {
  const json = (await readdir(cacheDir)).find((f) => f.endsWith('.json'))!;
  return { path: join(cacheDir, json), entry: JSON.parse(await readFile(join(cacheDir, json), 'utf8')) };
};

describe("packedWeights 'cache': ORT's packed weights written once to the graph cache, then mapped", () => {
  let want: Float32Array;
  beforeAll(async () => {
    want = (await run({ device: 'cpu', logger: () => {}, cacheDir: join(work, 'memory') })).y;
  });

  it('the first load writes the packed copy, later ones use it, every one with the same numbers', async () => {
    const cacheDir = join(work, 'cache');
    const o = { device: 'cpu' as const, logger: () => {}, cacheDir, packedWeights: 'cache' as const };
    const first = await run(o);
    expect(first.cached).toBe(false);
    expect(first.y).toEqual(want);
    const files = await readdir(cacheDir);
    expect(files.filter((f) => f.includes('.packed.')).map((f) => f.replace(/^.*\.packed\./, ''))).toEqual(['data', 'onnx']);
    expect(files.some((f) => f.startsWith('.vlmkit-packing-'))).toBe(false);
    const { entry } = await entryOf(cacheDir);
    expect(entry.packed.for).toBe(packedFor());
    // The 2 MiB of blocks and ORT's packed copy of them.
    expect(entry.packed.data.size).toBeGreaterThan(2 * 2 ** 20);

    const second = await run(o);
    expect(second.cached).toBe(true);
    expect(second.y).toEqual(want);

    // What a killed writer leaves (its private folder) is removed once its process is gone.
    const dead = join(cacheDir, '.vlmkit-packing-999999999-abc123');
    await mkdir(dead);
    await writeFile(join(dead, 'x.packed.data'), 'partial');
    await run(o);
    expect((await readdir(cacheDir)).some((f) => f.startsWith('.vlmkit-packing-'))).toBe(false);
  });

  it('a damaged packed copy is written again, never served; the entry itself stays', async () => {
    const logged: string[] = [];
    const cacheDir = join(work, 'damaged');
    const o = { device: 'cpu' as const, logger: (m: string) => void logged.push(m), cacheDir, packedWeights: 'cache' as const };
    await run(o);
    const data = (await readdir(cacheDir)).find((f) => f.endsWith('.packed.data'))!;
    const size = (await entryOf(cacheDir)).entry.packed.data.size;
    await truncate(join(cacheDir, data), size - 4096);

    const again = await run(o);
    expect(again.cached).toBe(true);
    expect(again.y).toEqual(want);
    expect(logged.some((m) => /packed copy of cached graph .* is damaged .*writing it again/.test(m))).toBe(true);
    expect((await entryOf(cacheDir)).entry.packed.data.size).toBe(size);
  });

  it('a copy packed by another ORT version or on another CPU is not used', async () => {
    const logged: string[] = [];
    const cacheDir = join(work, 'elsewhere');
    const o = { device: 'cpu' as const, logger: (m: string) => void logged.push(m), cacheDir, packedWeights: 'cache' as const };
    await run(o);
    const { path, entry } = await entryOf(cacheDir);
    await writeFile(path, JSON.stringify({ ...entry, packed: { ...entry.packed, for: 'onnxruntime-node 0.0.0 x64 0' } }));
    expect((await run(o)).y).toEqual(want);
    expect(logged.some((m) => /packed for onnxruntime-node 0\.0\.0/.test(m))).toBe(true);
    expect((await entryOf(cacheDir)).entry.packed.for).toBe(packedFor());
  });

  it('where nothing is over 1 MiB there is nothing to map: refused once, recorded, and packed in memory', async () => {
    const small = join(work, 'small');
    await mkdir(small);
    const w = new Float32Array(256 * 256).map((_, i) => Math.cos(i) * 0.05);
    await writeSafetensors(join(small, 'model.safetensors'), { 'fc.weight': { dtype: 'F32', shape: [256, 256], data: w } });
    const at = { dir: small, k: 256 };
    const expected = (await run({ device: 'cpu', logger: () => {}, cacheDir: join(work, 'small-memory') }, at)).y;
    const logged: string[] = [];
    const cacheDir = join(work, 'small-cache');
    const o = { device: 'cpu' as const, logger: (m: string) => void logged.push(m), cacheDir, packedWeights: 'cache' as const };
    expect((await run(o, at)).y).toEqual(expected);
    expect((await entryOf(cacheDir)).entry.packed.refused).toMatch(/no tensor of it is over 1 MiB/);
    expect((await readdir(cacheDir)).filter((f) => f.includes('.packed.'))).toEqual([]);
    expect((await run(o, at)).y).toEqual(expected);
    expect(logged.filter((m) => m.startsWith('no packed copy'))).toHaveLength(1);
  });

  it("the profile field reaches a model's sessions (ERNIE-tiny int4: every tensor small, so packed in memory)", async () => {
    const c = fixtureCases('ernie-tiny').find((x) => x.name === 'text-only')!;
    const inputs = await readTensors(join(c.dir, 'inputs.safetensors'));
    const logits = async (cacheDir: string, packedWeights: 'memory' | 'cache') => {
      const m = await Ernie45VL.fromPretrained(join(FIXTURES, 'ernie-tiny'), {
        device: 'cpu',
        reference: 'hf',
        cacheDir,
        quantize: 'int4',
        profile: { packedWeights, logger: () => {} },
      });
      try {
        return (await m.forward(inputs as never)).logits.data as Float32Array;
      } finally {
        await m.release();
      }
    };
    const cacheDir = join(work, 'ernie-cache');
    expect(await logits(cacheDir, 'cache')).toEqual(await logits(join(work, 'ernie-memory'), 'memory'));
    const entries = (await readdir(cacheDir)).filter((f) => f.endsWith('.json'));
    const packed = await Promise.all(entries.map(async (f) => JSON.parse(await readFile(join(cacheDir, f), 'utf8')).packed));
    // The decoder (MatMulNBits) prepacks, the float32 vision encoder does not.
    expect(packed.filter((p) => p !== undefined).map((p) => p.refused)).toEqual([expect.stringMatching(/over 1 MiB/)]);
  });
});
