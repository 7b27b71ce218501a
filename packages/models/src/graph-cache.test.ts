import { chmod, cp, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModelProto } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ernie45VLConfig } from './ernie/config.js';
import { Ernie45VL } from './ernie/model.js';
import { buildErnieVisionEncoder } from './ernie/vision-encoder.js';
import { loadErnieWeights } from './ernie/weights.js';
import { defaultCacheDir, GraphCache } from './graph-cache.js';
import { FIXTURES, fixtureCases, readTensors, relError } from './test-utils/fixtures.js';

const SOURCE = join(FIXTURES, 'ernie-tiny');
let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'vlmkit-cache-test-'));
});
afterAll(async () => {
  await chmod(work, 0o755).catch(() => {});
  await rm(work, { recursive: true, force: true });
});

/** A copy of the tiny ERNIE checkpoint (config + weights) in its own folder. */
async function checkpointCopy(name: string): Promise<string> {
  const dir = join(work, name);
  await cp(join(SOURCE, 'config.json'), join(dir, 'config.json'));
  await cp(join(SOURCE, 'model.safetensors'), join(dir, 'model.safetensors'));
  return dir;
}

/** The ERNIE vision encoder graph of a checkpoint folder (weights as file references into it). */
async function visionGraph(dir: string) {
  const config = ernie45VLConfig(JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>, 'vllm');
  const ckpt = await Checkpoint.open(dir);
  const mapped = await loadErnieWeights(ckpt, config);
  return { graph: buildErnieVisionEncoder(mapped.vision, mapped.resampler, config), close: () => ckpt.close() };
}

/** Flips one byte in the middle of a file, in place (same size). */
async function flipByte(path: string): Promise<void> {
  const bytes = await readFile(path);
  const i = bytes.length >> 1;
  bytes[i] = bytes[i]! ^ 0xff;
  await writeFile(path, bytes);
}

function logs(): { lines: string[]; logger: (m: string) => void } {
  const lines: string[] = [];
  return { lines, logger: (m) => lines.push(m) };
}

describe('graph cache', () => {
  it('defaults to $XDG_CACHE_HOME/vlmkit, else ~/.cache/vlmkit (a relative XDG_CACHE_HOME is ignored)', () => {
    expect(defaultCacheDir({ XDG_CACHE_HOME: '/x/cache' })).toBe('/x/cache/vlmkit');
    expect(defaultCacheDir({})).toMatch(/\.cache\/vlmkit$/);
    expect(defaultCacheDir({ XDG_CACHE_HOME: 'rel' })).toMatch(/\.cache\/vlmkit$/);
  });

  it('a read-only model directory: graphs go to the cache, the model directory is untouched, the second load is served', async () => {
    const dir = await checkpointCopy('readonly');
    const before = (await readdir(dir)).sort();
    await chmod(dir, 0o555);
    const cacheDir = join(work, 'cache-ro');
    try {
      const { lines, logger } = logs();
      const m = await Ernie45VL.fromPretrained(dir, { device: 'cpu', reference: 'hf', cacheDir, logger });
      const c = fixtureCases('ernie-tiny').find((x) => x.name === 'text-only')!;
      const inputs = await readTensors(join(c.dir, 'inputs.safetensors'));
      const expected = await readTensors(join(c.dir, 'expected.safetensors'));
      const out = await m.forward(inputs as never);
      await m.release();
      expect(relError(out.logits.data as Float32Array, expected.logits!.data as Float32Array)).toBeLessThan(1e-4);
      expect((await readdir(dir)).sort()).toEqual(before);
      expect((await readdir(cacheDir)).filter((f) => f.endsWith('.json'))).toHaveLength(2);
      const { graph, close } = await visionGraph(dir);
      const cache = await GraphCache.open(cacheDir, { logger });
      expect((await cache.get(graph, 'ernie-vision', dir)).cached).toBe(true);
      await close();
      expect(lines.filter((l) => l.includes('damaged'))).toEqual([]);
    } finally {
      await chmod(dir, 0o755);
    }
  });

  it('cacheDir set to the model directory (asked for): tensors used as stored point into the .safetensors; folded ones are written once', async () => {
    const dir = await checkpointCopy('in-model-dir');
    const m = await Ernie45VL.fromPretrained(dir, { device: 'cpu', reference: 'hf', cacheDir: dir, logger: () => {} });
    const c = fixtureCases('ernie-tiny').find((x) => x.name === 'images')!;
    const out = await m.forward((await readTensors(join(c.dir, 'inputs.safetensors'))) as never);
    await m.release();
    const expected = await readTensors(join(c.dir, 'expected.safetensors'));
    expect(relError(out.logits.data as Float32Array, expected.logits!.data as Float32Array)).toBeLessThan(1e-4);
    const files = await readdir(dir);
    const externals = async (prefix: string) => {
      const onnx = files.find((f) => f.startsWith(prefix) && f.endsWith('.onnx'))!;
      const proto = await loadModelProto(join(dir, onnx));
      const where = (proto.graph!.initializer ?? []).flatMap((t) =>
        t.externalData?.length ? [{ file: t.externalData.find((e) => e.key === 'location')!.value!, name: t.name! }] : [],
      );
      return { onnx, where };
    };
    // Linear weights are stored transposed ([in, out], ORT's layout) in the graph's own data file, once;
    // tensors used as stored (the embedding table, read by Gather and by the LM head's Gemm) are read from
    // the checkpoint in place.
    for (const prefix of ['vlmkit-ernie-vision-', 'vlmkit-ernie-decoder-']) {
      const { onnx, where } = await externals(prefix);
      for (const w of where) {
        expect(w.file).toBe(w.name.endsWith('Transpose/out') ? `${onnx}.data` : 'model.safetensors');
      }
    }
    const decoder = await externals('vlmkit-ernie-decoder-');
    expect(decoder.where.filter((w) => w.file === 'model.safetensors').map((w) => w.name)).toContain('decoder.embed_tokens.weight');
  });

  it('a cache on the checkpoint filesystem hard-links its .safetensors: tensors used as stored are not copied', async () => {
    const dir = await checkpointCopy('blobs');
    const cacheDir = join(work, 'cache-blobs');
    const m = await Ernie45VL.fromPretrained(dir, { device: 'cpu', reference: 'hf', cacheDir, logger: () => {} });
    const c = fixtureCases('ernie-tiny').find((x) => x.name === 'text-only')!;
    const out = await m.forward((await readTensors(join(c.dir, 'inputs.safetensors'))) as never);
    await m.release();
    const expected = await readTensors(join(c.dir, 'expected.safetensors'));
    expect(relError(out.logits.data as Float32Array, expected.logits!.data as Float32Array)).toBeLessThan(1e-4);
    const files = await readdir(cacheDir);
    const blobs = files.filter((f) => f.startsWith('vlmkit-blob-'));
    expect(blobs).toHaveLength(1);
    const [ckpt, blob] = [await stat(join(dir, 'model.safetensors')), await stat(join(cacheDir, blobs[0]!))];
    expect([blob.ino, blob.nlink]).toEqual([ckpt.ino, 2]);
    const onnx = files.find((f) => f.startsWith('vlmkit-ernie-decoder-') && f.endsWith('.onnx'))!;
    const proto = await loadModelProto(join(cacheDir, onnx));
    const embed = proto.graph!.initializer!.find((t) => t.name === 'decoder.embed_tokens.weight')!;
    expect(embed.externalData!.find((e) => e.key === 'location')!.value).toBe(blobs[0]);
    // A removed link is noticed and the decoder's entry rebuilt (linked again).
    await rm(join(cacheDir, blobs[0]!));
    const { lines, logger } = logs();
    await (await Ernie45VL.fromPretrained(dir, { device: 'cpu', reference: 'hf', cacheDir, logger })).release();
    expect(lines.filter((l) => l.includes('damaged'))).toEqual([
      expect.stringMatching(/vlmkit-ernie-decoder-.*vlmkit-blob-[0-9a-f]+\.safetensors is missing\); rebuilding it/),
    ]);
    expect((await stat(join(cacheDir, blobs[0]!))).ino).toBe(ckpt.ino);
  });

  it('a damaged .onnx.data or .onnx is detected, rebuilt and reported, never served', async () => {
    const dir = await checkpointCopy('damage');
    const cacheDir = join(work, 'cache-damage');
    const { graph, close } = await visionGraph(dir);
    const { lines, logger } = logs();
    const cache = await GraphCache.open(cacheDir, { logger });
    const first = await cache.get(graph, 'ernie-vision', dir);
    expect(first.cached).toBe(false);
    const good = await readFile(`${first.modelPath}.data`);
    await flipByte(`${first.modelPath}.data`);
    const again = await cache.get(graph, 'ernie-vision', dir);
    expect(again.cached).toBe(false);
    expect(lines.at(-1)).toMatch(/is damaged \(.*\.onnx\.data does not have the sha256 it was written with\); rebuilding it/);
    expect(await readFile(`${first.modelPath}.data`)).toEqual(good);
    // The same damage with the file's mtime set back: ctime still says it changed.
    const s = await stat(`${first.modelPath}.data`);
    await flipByte(`${first.modelPath}.data`);
    await utimes(`${first.modelPath}.data`, s.atime, s.mtime);
    expect((await cache.get(graph, 'ernie-vision', dir)).cached).toBe(false);
    expect(lines.at(-1)).toMatch(/\.onnx\.data does not have the sha256/);
    // A truncated .onnx (it would fail with a protobuf error) and a missing data file.
    await writeFile(first.modelPath, (await readFile(first.modelPath)).subarray(0, 100));
    expect((await cache.get(graph, 'ernie-vision', dir)).cached).toBe(false);
    expect(lines.at(-1)).toMatch(/\.onnx has 100 bytes, \d+ were written\); rebuilding it/);
    await rm(`${first.modelPath}.data`);
    expect((await cache.get(graph, 'ernie-vision', dir)).cached).toBe(false);
    expect(lines.at(-1)).toMatch(/\.onnx\.data is missing/);
    expect((await cache.get(graph, 'ernie-vision', dir)).cached).toBe(true);
    await close();
  });

  it('a checkpoint replaced in place by another of the same shapes, size and mtime gets a different key', async () => {
    const dir = await checkpointCopy('replaced');
    const cacheDir = join(work, 'cache-replaced');
    const cache = await GraphCache.open(cacheDir, { logger: () => {} });
    const a = await visionGraph(dir);
    const keyA = (await cache.key(a.graph, dir)).key;
    await a.close();
    const file = join(dir, 'model.safetensors');
    const s = await stat(file);
    await flipByte(file);
    await utimes(file, s.atime, s.mtime);
    expect((await stat(file)).size).toBe(s.size);
    const b = await visionGraph(dir);
    const keyB = (await cache.key(b.graph, dir)).key;
    expect(keyB).not.toBe(keyA);
    // The same bytes at another path: the same key (content, not path).
    const other = await checkpointCopy('replaced-copy');
    await cp(file, join(other, 'model.safetensors'));
    const c = await visionGraph(other);
    expect((await cache.key(c.graph, other)).key).toBe(keyB);
    await b.close();
    await c.close();
  });

  it('digests are remembered by path + size + mtime + ctime + inode, and recomputed when those change', async () => {
    const dir = await checkpointCopy('memo');
    const cache = await GraphCache.open(join(work, 'cache-memo'), { logger: () => {} });
    const file = join(dir, 'model.safetensors');
    const real = await cache.fileDigest(file);
    const memos = await readdir(join(cache.root, 'digests'));
    expect(memos).toHaveLength(1);
    const memoPath = join(cache.root, 'digests', memos[0]!);
    const memo = JSON.parse(await readFile(memoPath, 'utf8')) as { sha256: string };
    await writeFile(memoPath, JSON.stringify({ ...memo, sha256: 'f'.repeat(64) }));
    // Served from the memo: the file was not read again.
    expect(await cache.fileDigest(file)).toBe('f'.repeat(64));
    const s = await stat(file);
    await utimes(file, s.atime, new Date(s.mtimeMs + 1000));
    expect(await cache.fileDigest(file)).toBe(real);
  });

  it('cleans what a killed build left and superseded builds', async () => {
    const dir = await checkpointCopy('clean');
    const cacheDir = join(work, 'cache-clean');
    const { lines, logger } = logs();
    const cache = await GraphCache.open(cacheDir, { logger, keep: 1 });
    // A build killed mid-way by a process that is gone (pid 2^22 + 1 is above Linux's pid_max), and one in flight here.
    const dead = 4194305;
    const leftovers = [`vlmkit-ernie-vision-0123.tmp-${dead}-abc.onnx`, `vlmkit-ernie-vision-0123.onnx.data.tmp-${dead}-abc`];
    const live = `vlmkit-ernie-vision-4567.tmp-${process.pid}-def.onnx`;
    for (const f of [...leftovers, live]) await writeFile(join(cacheDir, f), 'partial');
    expect((await cache.clean()).sort()).toEqual([...leftovers].sort());
    expect(lines.at(-1)).toMatch(/removed 2 unfinished graph cache file/);
    expect(await readdir(cacheDir)).toContain(live);
    await rm(join(cacheDir, live));
    // Superseded: the checkpoint changes, the new build replaces the old entry (keep: 1).
    const a = await visionGraph(dir);
    const first = await cache.get(a.graph, 'ernie-vision', dir);
    await a.close();
    await flipByte(join(dir, 'model.safetensors'));
    const b = await visionGraph(dir);
    const second = await cache.get(b.graph, 'ernie-vision', dir);
    await b.close();
    expect(second.modelPath).not.toBe(first.modelPath);
    const files = (await readdir(cacheDir)).filter((f) => f.startsWith('vlmkit-'));
    const base = second.modelPath.slice(cacheDir.length + 1, -'.onnx'.length);
    expect(files.sort()).toEqual([`${base}.json`, `${base}.onnx`, `${base}.onnx.data`]);
    // The remembered digest of a checkpoint that is gone goes with the next build's cleaning.
    const memos = () => readdir(join(cacheDir, 'digests'));
    expect(await memos()).toHaveLength(1);
    const other = await checkpointCopy('clean-other');
    await flipByte(join(other, 'model.safetensors'));
    await flipByte(join(other, 'model.safetensors'));
    const c = await visionGraph(other);
    await rm(join(dir, 'model.safetensors'));
    await cache.get(c.graph, 'ernie-vision', other);
    await c.close();
    expect(await memos()).toHaveLength(1);
  });

  it('a cacheDir that is a file is refused with a clear error', async () => {
    const file = join(work, 'not-a-dir');
    await writeFile(file, 'x');
    await expect(GraphCache.open(file)).rejects.toMatchObject({ code: 'BAD_CACHE_DIR', message: expect.stringContaining('is a file') });
  });
});
