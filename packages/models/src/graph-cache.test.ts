import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  chmod,
  cp,
  link,
  lstat,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { applyPasses, deferPasses, Graph, type GraphPass, lazyTensor, loadModelProto, onnx } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256File } from './cache-files.node.js';
import { ernie45VLConfig } from './ernie/config.js';
import { Ernie45VL } from './ernie/model.js';
import { buildErnieVisionEncoder } from './ernie/vision-encoder.js';
import { loadErnieWeights } from './ernie/weights.js';
import { ModelError } from './errors.js';
import { defaultCacheDir, GraphCache } from './graph-cache.node.js';
import { resolveLoad } from './model-load.js';
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

/**
 * The ERNIE vision encoder graph of a checkpoint folder (weights as file references into it); `int8`: its
 * linear layers quantized, so that its cache entry has a data file.
 */
async function visionGraph(dir: string, quantize?: 'int8') {
  const config = ernie45VLConfig(JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>, 'vllm');
  const ckpt = await Checkpoint.open(dir);
  const mapped = await loadErnieWeights(ckpt, config);
  // As a load builds it: the cpu profile's passes, keyed before they run.
  const build = { ...resolveLoad({ device: 'cpu' }).vision, ...(quantize ? { quantize } : {}) };
  return { graph: deferPasses(() => buildErnieVisionEncoder(config, mapped, build)), close: () => ckpt.close() };
}

/** ERNIE loaded from `dir` through the graph cache in `cacheDir` (HF reference, quiet), then released; its logits on the text-only case. */
async function textOnlyLogits(dir: string, cacheDir: string, quantize?: 'int8' | 'int4'): Promise<Float32Array> {
  const c = fixtureCases('ernie-tiny').find((x) => x.name === 'text-only')!;
  const inputs = await readTensors(join(c.dir, 'inputs.safetensors'));
  const m = await Ernie45VL.fromPretrained(dir, {
    device: 'cpu',
    reference: 'hf',
    cacheDir,
    ...(quantize ? { quantize } : {}),
    profile: { logger: () => {} },
  });
  try {
    return (await m.forward(inputs as never)).logits.data as Float32Array;
  } finally {
    await m.release();
  }
}

/** The name of an initializer folded from a Transpose or Cast of a weight (onnx-graph's `fold`). */
const FOLDED = /\.(Transpose|Cast)(_\d+)?\/out$/;

/** A whole second, so that a file's mtime can be set back exactly. */
const PINNED = new Date(1_700_000_000_000);

/**
 * The checkpoint's float32 tensor data scaled by `factor`, in place: same header, size, inode and (pinned)
 * mtime, other weights.
 */
async function scaleWeights(path: string, factor: number): Promise<void> {
  const bytes = await readFile(path);
  const start = 8 + Number(bytes.readBigUInt64LE(0));
  const data = new Float32Array(bytes.buffer, bytes.byteOffset + start, (bytes.length - start) >> 2);
  for (let i = 0; i < data.length; i++) data[i] = data[i]! * factor;
  await writeFile(path, bytes);
  await utimes(path, PINNED, PINNED);
}

/**
 * Every external-data location of a cached graph, by initializer name: 'cache' for its own data file, else the
 * file (realpath) it names, resolved against the entry's folder as ORT resolves it.
 */
async function locations(onnx: string): Promise<Map<string, string>> {
  const proto = await loadModelProto(onnx);
  const { folder } = JSON.parse(await readFile(onnx.replace(/\.onnx$/, '.json'), 'utf8')) as { folder: string };
  const own = await realpath(`${onnx}.data`).catch(() => undefined);
  return new Map(
    (proto.graph!.initializer ?? []).flatMap((t) => {
      if (!t.externalData?.length) return [];
      const file = resolve(folder, t.externalData.find((e) => e.key === 'location')!.value!);
      return [[t.name!, file === own ? 'cache' : file] as [string, string]];
    }),
  );
}

/** Flips one byte in the middle of a file, in place (same size). */
async function flipByte(path: string): Promise<void> {
  const bytes = await readFile(path);
  const i = bytes.length >> 1;
  bytes[i] = bytes[i]! ^ 0xff;
  await writeFile(path, bytes);
}

/** Every file under `dir`, recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(path)));
    else out.push(path);
  }
  return out;
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
      const m = await Ernie45VL.fromPretrained(dir, { device: 'cpu', reference: 'hf', cacheDir, profile: { logger } });
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

  it('the checkpoint is the weight store: tensors used as stored are read from the .safetensors in place, never copied', async () => {
    const dir = await checkpointCopy('weight-store');
    for (const cacheDir of [join(work, 'cache-weight-store'), dir]) {
      const m = await Ernie45VL.fromPretrained(dir, { device: 'cpu', reference: 'hf', cacheDir, profile: { logger: () => {} } });
      const c = fixtureCases('ernie-tiny').find((x) => x.name === 'images')!;
      const out = await m.forward((await readTensors(join(c.dir, 'inputs.safetensors'))) as never);
      await m.release();
      const expected = await readTensors(join(c.dir, 'expected.safetensors'));
      expect(relError(out.logits.data as Float32Array, expected.logits!.data as Float32Array)).toBeLessThan(1e-4);
      const files = (await readdir(cacheDir)).filter((f) => f.startsWith('vlmkit-'));
      // Tensors used as stored are named by a logical location (the session names the file for ORT). A float32
      // checkpoint's Linear weights are read as stored ('stored-layout'): no transposed copy; the data file
      // holds only weights the mapping computes (q, k and v in one, ERNIE's routers split by modality). No link.
      expect(files.filter((f) => f.endsWith('.safetensors'))).toEqual([]);
      const weights = await realpath(join(dir, 'model.safetensors'));
      let stored = 0;
      for (const onnx of files.filter((f) => f.endsWith('.onnx'))) {
        for (const [name, location] of await locations(join(cacheDir, onnx))) {
          if (location === 'cache') expect(name).not.toMatch(FOLDED);
          else expect([name, location]).toEqual([name, weights]);
        }
        stored += (await stat(join(cacheDir, `${onnx}.data`)).catch(() => ({ size: 0 }))).size;
      }
      expect(stored / (await stat(weights)).size).toBeLessThan(0.25);
      const decoder = files.find((f) => f.startsWith('vlmkit-ernie-decoder-') && f.endsWith('.onnx'))!;
      expect((await locations(join(cacheDir, decoder))).get('decoder.embed_tokens.weight')).toBe(weights);
    }
  });

  it('a quantized graph stores only what quantization produces; every other weight is read from the checkpoint', async () => {
    const dir = await checkpointCopy('quantized-store');
    const cacheDir = join(work, 'cache-quantized-store');
    await textOnlyLogits(dir, cacheDir, 'int4');
    const decoder = (await readdir(cacheDir)).find((f) => f.startsWith('vlmkit-ernie-decoder-') && f.endsWith('.onnx'))!;
    const where = await locations(join(cacheDir, decoder));
    const inCache = [...where].filter(([, l]) => l === 'cache').map(([n]) => n);
    // MatMulNBits' blocks and scales, and the routers (float, split by modality from one checkpoint tensor).
    const quantized = inCache.filter((n) => !/experts_gate\.weight$/.test(n));
    expect(quantized.length).toBeGreaterThan(0);
    for (const name of quantized) expect(name).toMatch(/\.(quant|scales|zero_points)$/);
    const weights = await realpath(join(dir, 'model.safetensors'));
    expect([...where].filter(([, l]) => l === weights).map(([n]) => n)).toContain('decoder.embed_tokens.weight');
    const data = (await stat(join(cacheDir, `${decoder}.data`))).size;
    expect(data / (await stat(join(dir, 'model.safetensors'))).size).toBeLessThan(0.35);
  });

  it("a graph's passes run only when it is written: a cached load skips them; the pass options are in the key", async () => {
    const dir = await checkpointCopy('deferred-passes');
    const config = ernie45VLConfig(JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>, 'vllm');
    const ckpt = await Checkpoint.open(dir);
    try {
      const mapped = await loadErnieWeights(ckpt, config);
      let runs = 0;
      const counting: GraphPass = {
        name: 'counting',
        run: () => {
          runs++;
          return 0;
        },
      };
      const build = (quantize?: 'int8' | 'int4', defer = true) => {
        const make = () => {
          const g = buildErnieVisionEncoder(config, mapped, quantize ? { quantize } : {});
          applyPasses(g, [counting]);
          return g;
        };
        return defer ? deferPasses(make) : make();
      };
      const cache = await GraphCache.open(join(work, 'cache-deferred'), { logger: () => {} });
      const first = await cache.get(build('int8'), 'v', dir);
      expect(first.cached).toBe(false);
      const ran = runs;
      expect(ran).toBeGreaterThan(0);
      const again = await cache.get(build('int8'), 'v', dir);
      expect(again.cached).toBe(true);
      expect(runs).toBe(ran);
      // What the written graph is (quantized, its compute dtype) comes from the entry, not from the unrewritten graph.
      expect([again.quantized, again.computeDtype]).toEqual([true, 'float32']);
      expect(Buffer.from(again.model).equals(Buffer.from(first.model))).toBe(true);
      const key = async (g: Graph) => (await cache.key(g, dir)).key;
      const keys = [await key(build('int8')), await key(build('int4')), await key(build())];
      expect(new Set(keys).size).toBe(3);
      // The same graph with its passes run at once: the same nodes and tensors written (its data file is named
      // after another key).
      const direct = await (await GraphCache.open(join(work, 'cache-direct'), { logger: () => {} })).get(build('int8', false), 'v', dir);
      const written = (m: Uint8Array) => {
        const graph = onnx.ModelProto.decode(m).graph!;
        return JSON.stringify([graph.node, graph.initializer?.map((t) => [t.name, t.dataType, t.dims?.map(Number)])]);
      };
      expect(written(direct.model)).toBe(written(first.model));
    } finally {
      await ckpt.close();
    }
  });

  it('a first load is told what its session will hold before anything is quantized or written; a refusal writes nothing', async () => {
    const dir = await checkpointCopy('before-build');
    const cacheDir = join(work, 'cache-before-build');
    const cache = await GraphCache.open(cacheDir, { logger: () => {} });
    const told: number[] = [];
    const refuse = (bytes: number) => {
      told.push(bytes);
      throw new ModelError('INSUFFICIENT_MEMORY', 'refused by the test');
    };
    for (const quantize of [undefined, 'int8'] as const) {
      const { graph, close } = await visionGraph(dir, quantize);
      await expect(cache.get(graph, 'ernie-vision', dir, [], refuse)).rejects.toMatchObject({ code: 'INSUFFICIENT_MEMORY' });
      await close();
    }
    expect((await readdir(cacheDir)).filter((f) => f.startsWith('vlmkit-'))).toEqual([]);
    // The bytes of the rewritten graph: int8 blocks and scales are about a quarter of the float32 weights.
    const [float, int8] = told as [number, number];
    expect(float).toBeGreaterThan(0);
    expect(int8 / float).toBeGreaterThan(0.2);
    expect(int8 / float).toBeLessThan(0.5);
    // Built once; found afterwards without being asked again.
    const { graph, close } = await visionGraph(dir);
    const allow = (bytes: number) => void told.push(bytes);
    expect((await cache.get(graph, 'ernie-vision', dir, [], allow)).cached).toBe(false);
    const again = await visionGraph(dir);
    expect((await cache.get(again.graph, 'ernie-vision', dir, [], allow)).cached).toBe(true);
    await Promise.all([close(), again.close()]);
    expect(told).toHaveLength(3);
  });

  it('a bf16 checkpoint in a float32 graph: what the check counts before the build is what the built entry counts', async () => {
    // The build folds the casts of bf16 weights into float32 data: the entry must not count them again as read
    // from the checkpoint, or a cached load that fits would be refused at twice its size.
    const cache = await GraphCache.open(join(work, 'cache-bf16'), { logger: () => {} });
    const { graph, close } = await visionGraph(join(FIXTURES, 'ernie-tiny-bf16'));
    let before = 0;
    const hit = await cache.get(graph, 'ernie-vision', join(FIXTURES, 'ernie-tiny-bf16'), [], (bytes) => {
      before = bytes;
    });
    await close();
    expect(hit.cached).toBe(false);
    expect(before).toBeGreaterThan(0);
    // The entry adds the .onnx itself (small) to the weights' bytes.
    expect(hit.bytes / before).toBeGreaterThan(0.95);
    expect(hit.bytes / before).toBeLessThan(1.2);
  });

  it('a cache folder moved elsewhere is served from where it is now, its locations rebased, with the same logits', async () => {
    const dir = await checkpointCopy('moved-cache');
    const [from, to] = [join(work, 'cache-moved-from'), join(work, 'elsewhere', 'cache-moved-to')];
    const first = await textOnlyLogits(dir, from, 'int8');
    const built = (await readdir(from)).filter((f) => f.endsWith('.onnx')).sort();
    await mkdir(join(work, 'elsewhere'));
    await rename(from, to);
    const { lines, logger } = logs();
    const c = fixtureCases('ernie-tiny').find((x) => x.name === 'text-only')!;
    const m = await Ernie45VL.fromPretrained(dir, { device: 'cpu', reference: 'hf', cacheDir: to, quantize: 'int8', profile: { logger } });
    const again = (await m.forward((await readTensors(join(c.dir, 'inputs.safetensors'))) as never)).logits.data as Float32Array;
    await m.release();
    expect(relError(again, first)).toBe(0);
    expect(lines.filter((l) => /damaged|rebuil/.test(l))).toEqual([]);
    expect((await readdir(to)).filter((f) => f.endsWith('.onnx')).sort()).toEqual(built);
  });

  it('a checkpoint changed in place after a first load (same size and mtime) is built again, never served stale', async () => {
    for (const quantize of [undefined, 'int8'] as const) {
      const dir = await checkpointCopy(`changed-${quantize ?? 'float'}`);
      await utimes(join(dir, 'model.safetensors'), PINNED, PINNED);
      const cacheDir = join(work, `cache-changed-${quantize ?? 'float'}`);
      const before = await textOnlyLogits(dir, cacheDir, quantize);
      const stamp = await stat(join(dir, 'model.safetensors'));
      await scaleWeights(join(dir, 'model.safetensors'), 0.5);
      const now = await stat(join(dir, 'model.safetensors'));
      expect([now.size, now.mtimeMs, now.ino]).toEqual([stamp.size, stamp.mtimeMs, stamp.ino]);
      const after = await textOnlyLogits(dir, cacheDir, quantize);
      // What a fresh cache gives for the changed checkpoint: the cached load must give exactly that.
      const fresh = await textOnlyLogits(dir, join(work, `cache-changed-fresh-${quantize ?? 'float'}`), quantize);
      expect(after).toEqual(fresh);
      expect(after).not.toEqual(before);
    }
  });

  it('nothing in the cache aliases a checkpoint file: damaging every cache file leaves the checkpoint as it was, and the next load rebuilds with the same logits', async () => {
    const dir = await checkpointCopy('alias');
    const cacheDir = join(work, 'cache-alias');
    const c = fixtureCases('ernie-tiny').find((x) => x.name === 'text-only')!;
    const inputs = await readTensors(join(c.dir, 'inputs.safetensors'));
    const logits = async (logger: (m: string) => void) => {
      const m = await Ernie45VL.fromPretrained(dir, { device: 'cpu', reference: 'hf', cacheDir, profile: { logger } });
      try {
        return (await m.forward(inputs as never)).logits.data as Float32Array;
      } finally {
        await m.release();
      }
    };
    const first = await logits(() => {});
    const checkpointFiles = await Promise.all(['model.safetensors', 'config.json'].map((f) => stat(join(dir, f))));
    const before = await sha256File(join(dir, 'model.safetensors'));
    const cacheFiles = await filesUnder(cacheDir);
    expect(cacheFiles.length).toBeGreaterThan(4);
    for (const f of cacheFiles) {
      const s = await lstat(f);
      expect(s.isSymbolicLink(), f).toBe(false);
      expect(
        checkpointFiles.some((k) => k.ino === s.ino && k.dev === s.dev),
        `${f} is a hard link of a checkpoint file`,
      ).toBe(false);
    }
    // What a user or a tool might do in place: overwrite, then truncate, cache files. First the graphs and
    // their data (the entries say what they should hold: reported as damaged), then every file.
    const damage = async (files: string[]) => {
      for (const [i, f] of files.entries()) {
        const fd = await open(f, 'r+');
        await fd.write(Buffer.alloc(64, 0x5a), 0, 64, 0);
        await fd.truncate(i % 2 === 0 ? 0 : 32);
        await fd.close();
      }
      expect(await sha256File(join(dir, 'model.safetensors'))).toBe(before);
      expect((await stat(join(dir, 'model.safetensors'))).size).toBe(checkpointFiles[0]!.size);
    };
    await damage(cacheFiles.filter((f) => /\.onnx(\.data)?$/.test(f)));
    const { lines, logger } = logs();
    expect(await logits(logger)).toEqual(first);
    expect(lines.filter((l) => l.includes('is damaged'))).toHaveLength(2);
    await damage(await filesUnder(cacheDir));
    expect(await logits(() => {})).toEqual(first);
    for (const f of (await readdir(cacheDir)).filter((n) => n.endsWith('.json'))) {
      expect(JSON.parse(await readFile(join(cacheDir, f), 'utf8'))).toMatchObject({ onnx: { size: expect.any(Number) } });
    }
  });

  it('the hard links of checkpoint files an older version made are removed, the checkpoint untouched; its entries are rebuilt', async () => {
    const dir = await checkpointCopy('old-links');
    const cacheDir = join(work, 'cache-old-links');
    const { lines, logger } = logs();
    const cache = await GraphCache.open(cacheDir, { logger });
    const ckpt = join(dir, 'model.safetensors');
    const sha = await sha256File(ckpt);
    const old = join(cacheDir, `vlmkit-blob-${sha.slice(0, 32)}.safetensors`);
    await link(ckpt, old);
    // Cleaned first: unlinking changes the checkpoint's link count, so its ctime and the key.
    await cache.clean();
    const { graph, close } = await visionGraph(dir);
    const { key } = await cache.key(graph, dir);
    // A format 3 entry of this graph, with its files, as the older version left it.
    const base = join(cacheDir, `vlmkit-ernie-vision-${key}`);
    await writeFile(`${base}.onnx`, 'old graph');
    await writeFile(`${base}.json`, JSON.stringify({ format: 3, onnx: { size: 9, sha256: '0' } }));
    expect((await cache.get(graph, 'ernie-vision', dir)).cached).toBe(false);
    await close();
    expect(await readdir(cacheDir)).not.toContain(basename(old));
    expect(lines).toContainEqual(expect.stringMatching(/removed 1 hard link\(s\) of checkpoint files made by an older vlmkit/));
    expect(lines).toContainEqual(expect.stringMatching(/is damaged \(entry format 3, expected \d+\); rebuilding it/));
    expect([(await stat(ckpt)).nlink, await sha256File(ckpt)]).toEqual([1, sha]);
  });

  it('a damaged .onnx.data or .onnx is detected, rebuilt and reported, never served', async () => {
    const dir = await checkpointCopy('damage');
    const cacheDir = join(work, 'cache-damage');
    const { graph, close } = await visionGraph(dir, 'int8');
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

  it('cache files replaced by a FIFO or a symlink are damage: never read, waited on or followed; rebuilt within 20 s', async () => {
    const dir = await checkpointCopy('special-files');
    const cacheDir = join(work, 'cache-special-files');
    const { graph, close } = await visionGraph(dir, 'int8');
    const { lines, logger } = logs();
    const cache = await GraphCache.open(cacheDir, { logger });
    const first = await cache.get(graph, 'ernie-vision', dir);
    const entry = first.modelPath.replace(/\.onnx$/, '.json');
    const elsewhere = join(work, 'special-files-data');
    await cp(`${first.modelPath}.data`, elsewhere);
    const within20s = <T>(p: Promise<T>) =>
      Promise.race([p, new Promise<string>((done) => setTimeout(() => done('still waiting after 20 s'), 20_000).unref())]);
    // The data file a symlink to a copy of itself (same bytes): still not served through the link.
    await rm(`${first.modelPath}.data`);
    await symlink(elsewhere, `${first.modelPath}.data`);
    expect(await within20s(cache.get(graph, 'ernie-vision', dir))).toMatchObject({ cached: false });
    expect(lines.at(-1)).toMatch(/\.onnx\.data is a symbolic link\); rebuilding it/);
    expect((await lstat(`${first.modelPath}.data`)).isFile()).toBe(true);
    // The entry a FIFO: a read would block forever.
    await rm(entry);
    execFileSync('mkfifo', [entry]);
    expect(await within20s(cache.get(graph, 'ernie-vision', dir))).toMatchObject({ cached: false });
    expect((await lstat(entry)).isFile()).toBe(true);
    expect(await within20s(cache.get(graph, 'ernie-vision', dir))).toMatchObject({ cached: true });
    // An entry that is JSON of this format but not an entry (a tool wrote it): a missing entry, not a crash.
    for (const text of ['{"format": 5}', '{"format": 5, "onnx": 1, "inputs": null}', '[]', 'null']) {
      await writeFile(entry, text);
      expect(await cache.get(graph, 'ernie-vision', dir)).toMatchObject({ cached: false });
    }
    // Empty directories in place of every cache file are removed and the files rebuilt.
    for (const path of [first.modelPath, `${first.modelPath}.data`, entry]) {
      await rm(path);
      await mkdir(path);
    }
    expect(await cache.get(graph, 'ernie-vision', dir)).toMatchObject({ cached: false });
    for (const path of [first.modelPath, `${first.modelPath}.data`, entry]) expect((await lstat(path)).isFile()).toBe(true);
    // A directory holding something is never removed (it may be someone's): refused by name.
    await rm(first.modelPath);
    await mkdir(first.modelPath);
    await writeFile(join(first.modelPath, 'notes.txt'), 'mine');
    await expect(cache.get(graph, 'ernie-vision', dir)).rejects.toMatchObject({
      code: 'BAD_CACHE_DIR',
      message: expect.stringContaining(`${first.modelPath} cannot be removed (a directory)`),
    });
    await close();
  });

  it('a checkpoint file that changes while its graph is built leaves no entry and no data file (BAD_INPUT)', async () => {
    const dir = await checkpointCopy('changes-while-built');
    const cacheDir = join(work, 'cache-changes-while-built');
    const file = join(dir, 'model.safetensors');
    const g = new Graph({ name: 'changing' });
    const x = g.input('x', 'float32', [512]);
    // A tensor computed while the graph is saved, during which the checkpoint file changes (chmod: its ctime).
    const w = g.initializer(
      'w',
      lazyTensor('float32', [512], async () => {
        await chmod(file, 0o600);
        return new Float32Array(512).fill(1);
      }),
    );
    g.output(g.add(x, w), 'y');
    const cache = await GraphCache.open(cacheDir, { logger: () => {} });
    await expect(cache.get(g, 'changing', dir)).rejects.toMatchObject({
      code: 'BAD_INPUT',
      message: expect.stringContaining(`${await realpath(file)} changed while the graph`),
    });
    expect((await readdir(cacheDir)).filter((f) => f.startsWith('vlmkit-'))).toEqual([]);
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
    // The key reads stamps, not bytes: the same bytes at another path are another file, built again.
    const other = await checkpointCopy('replaced-copy');
    await cp(file, join(other, 'model.safetensors'));
    const c = await visionGraph(other);
    expect((await cache.key(c.graph, other)).key).not.toBe(keyB);
    await b.close();
    await c.close();
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
    const a = await visionGraph(dir, 'int8');
    const first = await cache.get(a.graph, 'ernie-vision', dir);
    await a.close();
    await flipByte(join(dir, 'model.safetensors'));
    const b = await visionGraph(dir, 'int8');
    const second = await cache.get(b.graph, 'ernie-vision', dir);
    await b.close();
    expect(second.modelPath).not.toBe(first.modelPath);
    const files = (await readdir(cacheDir)).filter((f) => f.startsWith('vlmkit-'));
    const base = second.modelPath.slice(cacheDir.length + 1, -'.onnx'.length);
    expect(files.sort()).toEqual([`${base}.json`, `${base}.onnx`, `${base}.onnx.data`]);
    // Remembered digests of checkpoint files that format 4 left are removed.
    await mkdir(join(cacheDir, 'digests'));
    await writeFile(join(cacheDir, 'digests', `${'0'.repeat(32)}.json`), '{}');
    await cache.clean();
    expect(await readdir(cacheDir)).not.toContain('digests');
  });

  it('a cacheDir that is a file is refused with a clear error', async () => {
    const file = join(work, 'not-a-dir');
    await writeFile(file, 'x');
    await expect(GraphCache.open(file)).rejects.toMatchObject({
      code: 'BAD_CACHE_DIR',
      message: expect.stringContaining('is a regular file'),
    });
  });

  it('a cacheDir that is not a writable directory tree (/proc/self, a FIFO, under a file) is refused by name within 20 s', async () => {
    const file = join(work, 'plain-file');
    await writeFile(file, 'x');
    const fifo = join(work, 'a-fifo');
    execFileSync('mkfifo', [fifo]);
    const cases: [string, RegExp][] = [
      ['/proc/self', /cannot be created/],
      ['/proc/self/vlmkit/graphs', /cannot be created/],
      ['/proc/1/fd', /cannot be created/],
      ['/sys/kernel/vlmkit', /cannot be created/],
      [fifo, /is a FIFO \(named pipe\), not a directory/],
      [join(fifo, 'sub'), /a parent of it is a file/],
      [join(file, 'sub'), /a parent of it is a file/],
    ];
    for (const [dir, why] of cases) {
      const t0 = performance.now();
      const outcome = await Promise.race([
        GraphCache.open(dir).then(
          () => 'opened',
          (e: unknown) => e,
        ),
        new Promise((done) => setTimeout(() => done('still waiting after 20 s'), 20_000).unref()),
      ]);
      expect(outcome, dir).toMatchObject({ code: 'BAD_CACHE_DIR', message: expect.stringContaining(dir) });
      expect((outcome as Error).message, dir).toMatch(why);
      expect(performance.now() - t0).toBeLessThan(20_000);
    }
  });
});

describe('graph cache shared by processes', () => {
  // Real processes, not workers: each has its own pid, as separate `vlmkit` runs do.
  const HOOKS = join(import.meta.dirname, 'test-utils', 'register-ts.mjs');
  const CHILD = join(import.meta.dirname, 'test-utils', 'load-child.mjs');

  /** Loads run in child processes, started together once every child has imported its modules. */
  async function loadTogether(loads: string[][]): Promise<string[]> {
    const children = loads.map((args) =>
      spawn(process.execPath, ['--conditions=@vlmkit/source', '--import', HOOKS, CHILD, ...args], {
        cwd: import.meta.dirname,
        stdio: ['pipe', 'pipe', 'inherit'],
      }),
    );
    const outputs = children.map(async (child) => {
      let text = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        text += d;
      });
      const [code] = (await once(child, 'close')) as [number | null];
      return { text, code };
    });
    const ready = children.map(
      (child) =>
        new Promise<void>((done) => {
          child.stdout.on('data', (d: Buffer | string) => String(d).includes('ready') && done());
          child.on('close', () => done());
        }),
    );
    await Promise.all(ready);
    for (const child of children) child.stdin.end('go\n');
    return (await Promise.all(outputs)).map(({ text, code }) => {
      const last = text.trim().split('\n').at(-1) ?? '';
      return code === 0 ? last : `exit ${code}: ${last}`;
    });
  }

  it("a killed first load leaves nothing that a second load trusts: the next load gives a clean load's logits", async () => {
    const ernie = join(FIXTURES, 'ernie-tiny');
    const clean = await textOnlyLogits(ernie, join(work, 'killed-clean'), 'int8');
    let midLoad = 0;
    for (const delay of [100, 250, 400, 550, 700, 900, 1200, 1600]) {
      const cacheDir = join(work, `killed-${delay}`);
      const child = spawn(process.execPath, ['--conditions=@vlmkit/source', '--import', HOOKS, CHILD, ernie, cacheDir, 'int8'], {
        cwd: import.meta.dirname,
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      let text = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        text += d;
      });
      const closed = once(child, 'close');
      while (!text.includes('ready') && child.exitCode === null) await new Promise((r) => setTimeout(r, 20));
      child.stdin.end('go\n');
      await new Promise((r) => setTimeout(r, delay));
      child.kill('SIGKILL');
      await closed;
      if (!text.includes('ok')) midLoad++;
      expect(await textOnlyLogits(ernie, cacheDir, 'int8'), `killed after ${delay} ms`).toEqual(clean);
      // The dead process's temporaries are gone; every entry left verifies (a second load served it or rebuilt it).
      expect((await readdir(cacheDir)).filter((f) => f.includes('.tmp-'))).toEqual([]);
    }
    expect(midLoad).toBeGreaterThan(0);
  }, 300_000);

  it('processes building different models into one fresh cache at once all load, round after round', async () => {
    const ernie = join(FIXTURES, 'ernie-tiny');
    const granite = join(FIXTURES, 'granite-tiny');
    // Six rounds: the code before format 4 failed 12 of 20 such rounds (a 0.4% chance to pass all six).
    for (let round = 0; round < 6; round++) {
      const cacheDir = join(work, `shared-${round}`);
      const results = await loadTogether([
        [ernie, cacheDir],
        [granite, cacheDir],
        [ernie, cacheDir, 'int8'],
      ]);
      expect(results, `round ${round}`).toEqual(['ok', 'ok', 'ok']);
      // ERNIE's vision graph is the same with the decoder quantized: one entry for both of its loads.
      expect((await readdir(cacheDir)).filter((f) => f.endsWith('.json'))).toHaveLength(5);
    }
  }, 300_000);
});
