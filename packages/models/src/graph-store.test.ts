import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deferPasses, serializeModel } from '@vlmkit/onnx-graph';
import { blobFiles, Checkpoint } from '@vlmkit/safetensors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ernie45VLConfig } from './ernie/config.js';
import { buildErnieVisionEncoder } from './ernie/vision-encoder.js';
import { loadErnieWeights } from './ernie/weights.js';
import { cachedBuild, type GraphStore, type MemoryBuild, PageGraphCache, STORE_FORMAT, type StoredEntry, storeKey } from './graph-store.js';
import { resolveLoad } from './model-load.js';
import { FIXTURES } from './test-utils/fixtures.js';

/** A GraphStore in memory, with the OPFS store's behaviour: each file replaced whole, the manifest written last. */
class MemoryStore implements GraphStore {
  readonly name = 'memory/';
  readonly entries = new Map<string, Map<string, { bytes: Uint8Array; modified: number }>>();
  clock = 1;
  /** Fails a put after this many files (a page closed while writing), once. */
  failAfter: number | undefined;
  /** What a put throws instead (a QuotaExceededError), once. */
  putError: Error | undefined;
  quota: { usage: number; quota: number } | undefined;
  /** What get and delete throw (a file another tab holds open), while set. */
  busy: Error | undefined;

  async get(key: string): Promise<StoredEntry | undefined> {
    if (this.busy) throw this.busy;
    const files = this.entries.get(key);
    if (files === undefined) return undefined;
    const manifest = files.get('manifest.json');
    return {
      manifest: manifest && new TextDecoder().decode(manifest.bytes),
      modified: Math.max(0, ...[...files.values()].map((f) => f.modified)),
      file: async (name) => {
        const f = files.get(name);
        return f && { size: f.bytes.byteLength, read: async (o, l) => f.bytes.slice(o, o + l) };
      },
    };
  }

  async put(key: string, files: Record<string, Uint8Array[]>, manifest: string): Promise<void> {
    const error = this.putError;
    this.putError = undefined;
    if (error) throw error;
    const entry = this.entries.get(key) ?? new Map();
    this.entries.set(key, entry);
    let written = 0;
    for (const [name, chunks] of Object.entries(files)) {
      if (this.failAfter !== undefined && written++ >= this.failAfter) {
        this.failAfter = undefined;
        throw new Error('the page was closed');
      }
      const bytes = new Uint8Array(chunks.reduce((a, c) => a + c.byteLength, 0));
      let at = 0;
      for (const c of chunks) {
        bytes.set(c, at);
        at += c.byteLength;
      }
      entry.set(name, { bytes, modified: this.clock++ });
    }
    entry.set('manifest.json', { bytes: new TextEncoder().encode(manifest), modified: this.clock++ });
  }

  async delete(key: string): Promise<void> {
    if (this.busy) throw this.busy;
    this.entries.delete(key);
  }

  async list(): Promise<string[]> {
    return [...this.entries.keys()];
  }

  async estimate() {
    return this.quota;
  }
}

const DIR = join(FIXTURES, 'ernie-tiny');
let config: ReturnType<typeof ernie45VLConfig>;
let weights: Uint8Array;
beforeEach(async () => {
  config = ernie45VLConfig(JSON.parse(await readFile(join(DIR, 'config.json'), 'utf8')) as Record<string, unknown>, 'vllm');
  weights = await readFile(join(DIR, 'model.safetensors'));
});
const opened: Checkpoint[] = [];
afterEach(async () => {
  for (const c of opened.splice(0)) await c.close();
});

/** ERNIE's vision encoder graph from a picked folder whose weights file has `lastModified` (undefined: a Blob without one). */
async function visionGraph(lastModified: number | undefined, quantize?: 'int8', device: 'cpu' | 'webgpu' = 'cpu') {
  const file =
    lastModified === undefined
      ? new Blob([weights as Uint8Array<ArrayBuffer>])
      : new File([weights as Uint8Array<ArrayBuffer>], 'model.safetensors', { lastModified });
  const ckpt = await Checkpoint.fromFiles(blobFiles({ 'model.safetensors': file }, 'ernie-tiny'));
  opened.push(ckpt);
  const mapped = await loadErnieWeights(ckpt, config);
  const build = { ...resolveLoad({ device }, device).vision, ...(quantize ? { quantize } : {}) };
  return { g: deferPasses(() => buildErnieVisionEncoder(config, mapped, build)), ckpt };
}

/** What memorySession's build gives, with tensors of 1 KiB and more as external buffers (so that data.bin has some). */
function builder(g: Awaited<ReturnType<typeof visionGraph>>['g'], counter: { builds: number }) {
  return async (): Promise<MemoryBuild> => {
    counter.builds++;
    const { runDeferredPasses } = await import('@vlmkit/onnx-graph');
    runDeferredPasses(g);
    return { ...(await serializeModel(g, { fold: true, externalThreshold: 1024 })), quantized: false, computeDtype: g.computeDtype };
  };
}

/** Byte equality (vitest's toEqual walks a typed array element by element, for minutes on megabytes). */
function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

function cacheOf(store: MemoryStore) {
  const logged: string[] = [];
  return { cache: new PageGraphCache(store, { logger: (m) => logged.push(m) }), logged };
}

async function load(cache: PageGraphCache, lastModified = 1000, name = 'ernie-vision') {
  const { g, ckpt } = await visionGraph(lastModified);
  const counter = { builds: 0 };
  const built = await cachedBuild(cache, g, name, { root: 'ernie-tiny', version: ckpt }, builder(g, counter));
  return { built, builds: counter.builds };
}

describe('the page graph cache key', () => {
  it('is the same for the same graph and files, another when a stamp or a build option changes', async () => {
    const key = async (lastModified: number | undefined, quantize?: 'int8', device?: 'webgpu') => {
      const { g, ckpt } = await visionGraph(lastModified, quantize, device);
      return storeKey(g, ckpt);
    };
    const first = await key(1000);
    expect(first).toEqual({ key: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(await key(1000)).toEqual(first);
    // The file's version (a File's lastModified; a URL's ETag) is in the key: a new upload is built again.
    expect(await key(2000)).not.toEqual(first);
    expect(await key(1000, 'int8')).not.toEqual(first);
    // The webgpu profile's passes (deferred, not yet run) give another key.
    expect(await key(1000, undefined, 'webgpu')).not.toEqual(first);
  });

  it('refuses a file whose version cannot be told (a Blob without lastModified)', async () => {
    const { g, ckpt } = await visionGraph(undefined);
    expect(storeKey(g, ckpt)).toEqual({ uncacheable: expect.stringMatching(/has no version to key it by \(blob:\d+/) });
    const store = new MemoryStore();
    const { cache, logged } = cacheOf(store);
    const counter = { builds: 0 };
    const built = await cachedBuild(cache, g, 'ernie-vision', { root: 'x', version: ckpt }, builder(g, counter));
    expect([built.cached, counter.builds, store.entries.size]).toEqual([false, 1, 0]);
    expect(logged).toEqual([expect.stringMatching(/graph ernie-vision not cached: .*model\.safetensors has no version/)]);
  });
});

describe('the page graph cache', () => {
  it('stores a build and serves it on the next load: the same bytes, no build', async () => {
    const store = new MemoryStore();
    const { cache, logged } = cacheOf(store);
    const first = await load(cache);
    expect([first.built.cached, first.builds]).toEqual([false, 1]);
    expect(first.built.externalData.length).toBeGreaterThan(0);
    const files = store.entries.get(first.built.key!)!;
    expect([...files.keys()].sort()).toEqual(['data.bin', 'manifest.json', 'model.onnx']);
    const manifest = JSON.parse(new TextDecoder().decode(files.get('manifest.json')!.bytes));
    expect(manifest).toMatchObject({ format: STORE_FORMAT, key: first.built.key, name: 'ernie-vision', checkpoint: 'ernie-tiny' });
    const second = await load(cache);
    expect([second.built.cached, second.builds, second.built.key]).toEqual([true, 0, first.built.key]);
    expect(same(second.built.bytes, first.built.bytes)).toBe(true);
    expect(second.built.externalData.map((b) => b.path)).toEqual(first.built.externalData.map((b) => b.path));
    for (const [i, b] of second.built.externalData.entries()) expect(same(b.data, first.built.externalData[i]!.data)).toBe(true);
    expect([second.built.quantized, second.built.computeDtype]).toEqual([false, 'float32']);
    expect(logged).toEqual([]);
  });

  it('never serves an entry whose write did not finish, and writes it again', async () => {
    const store = new MemoryStore();
    const { cache, logged } = cacheOf(store);
    store.failAfter = 1; // model.onnx written, then the page closed: no data.bin, no manifest
    const first = await load(cache);
    expect(first.built.cached).toBe(false);
    expect(logged).toEqual([expect.stringMatching(/not cached in memory\/: the store failed: the page was closed/)]);
    expect(store.entries.size).toBe(0);
    // Files left without a manifest (a page killed mid-write) are not an entry.
    const second = await load(cache);
    store.entries.get(second.built.key!)!.delete('manifest.json');
    const third = await load(cache);
    expect([third.built.cached, third.builds]).toEqual([false, 1]);
    expect((await load(cache)).built.cached).toBe(true);
  });

  it('loads without the cache when the store fails', async () => {
    const store = new MemoryStore();
    const { cache, logged } = cacheOf(store);
    const first = await load(cache);
    store.busy = new DOMException('the file is held open by another page', 'NoModificationAllowedError');
    const second = await load(cache);
    expect([second.built.cached, second.builds, same(second.built.bytes, first.built.bytes)]).toEqual([false, 1, true]);
    expect(logged).toEqual([
      expect.stringMatching(
        /^graph ernie-vision: reading memory\/[0-9a-f]+ failed \(the file is held open by another page\); loading without it$/,
      ),
      expect.stringMatching(
        /^graph ernie-vision: storing memory\/[0-9a-f]+ failed \(the file is held open by another page\); loading without it$/,
      ),
    ]);
    store.busy = undefined;
    expect((await load(cache)).built.cached).toBe(true);
  });

  it('finds a damaged entry, removes it and builds again', async () => {
    const damage = async (what: (files: Map<string, { bytes: Uint8Array; modified: number }>) => void) => {
      const store = new MemoryStore();
      const { cache, logged } = cacheOf(store);
      const { built } = await load(cache);
      what(store.entries.get(built.key!)!);
      const again = await load(cache);
      return { again, logged };
    };
    const flip = (f: { bytes: Uint8Array }, at: number) => {
      f.bytes[at] = f.bytes[at]! ^ 0xff;
    };
    // model.onnx is hashed on every load.
    const model = await damage((files) => flip(files.get('model.onnx')!, 10));
    expect([model.again.built.cached, model.again.builds]).toEqual([false, 1]);
    expect(model.logged).toEqual([
      expect.stringMatching(/is damaged \(model\.onnx does not have the sha256 it was written with\); building it again/),
    ]);
    // So is each buffer of data.bin: a byte changed in place is found whatever the file's modification time.
    const data = await damage((files) => flip(files.get('data.bin')!, 5));
    expect([data.again.built.cached, data.again.builds]).toEqual([false, 1]);
    expect(data.logged).toEqual([expect.stringMatching(/data\.bin's buffer initializer_\d+\.bin does not have the sha256/)]);
    // A truncated file, a manifest that is not one.
    const short = await damage((files) => {
      const f = files.get('data.bin')!;
      f.bytes = f.bytes.slice(1);
    });
    expect(short.logged).toEqual([expect.stringMatching(/data\.bin has \d+ bytes, \d+ were written/)]);
    const bad = await damage((files) => {
      files.get('manifest.json')!.bytes = new TextEncoder().encode('{"format": 1, "key": 3}');
    });
    expect(bad.logged).toEqual([expect.stringMatching(/manifest\.json is not a manifest/)]);
    // A graph without external buffers has an empty data.bin: one grown since is damage too.
    const inline = new MemoryStore();
    const { cache: inlineCache, logged: inlineLogged } = cacheOf(inline);
    // Each load builds its graph anew (a graph's passes run once), all of its tensors inline.
    const inlineLoad = async () => {
      const { g, ckpt } = await visionGraph(1000);
      return cachedBuild(inlineCache, g, 'ernie-vision', { root: 'x', version: ckpt }, async () => {
        const { runDeferredPasses } = await import('@vlmkit/onnx-graph');
        runDeferredPasses(g);
        const model = await serializeModel(g, { fold: true, externalThreshold: Number.POSITIVE_INFINITY });
        return { ...model, quantized: false, computeDtype: 'float32' };
      });
    };
    const stored = await inlineLoad();
    const empty = inline.entries.get(stored.key!)!.get('data.bin')!;
    expect([stored.externalData.length, empty.bytes.byteLength]).toEqual([0, 0]);
    empty.bytes = new Uint8Array([1]);
    expect((await inlineLoad()).cached).toBe(false);
    expect(inlineLogged).toEqual([expect.stringMatching(/data\.bin has 1 bytes, 0 were written/)]);
    // The entry built again is served.
    const store = new MemoryStore();
    const { cache } = cacheOf(store);
    const { built } = await load(cache);
    flip(store.entries.get(built.key!)!.get('data.bin')!, 5);
    expect([(await load(cache)).built.cached, (await load(cache)).built.cached]).toEqual([false, true]);
  });

  it('keeps the newest 3 entries of a model and checkpoint', async () => {
    const store = new MemoryStore();
    const { cache, logged } = cacheOf(store);
    const keys: string[] = [];
    for (const lastModified of [1, 2, 3, 4]) keys.push((await load(cache, lastModified)).built.key!);
    expect((await store.list()).sort()).toEqual(keys.slice(1).sort());
    expect(logged).toEqual([`removed superseded cached graph memory/${keys[0]}`]);
    // Another model's entries are not counted with these.
    await load(cache, 5, 'other-vision');
    expect((await store.list()).length).toBe(4);
  });

  it('evicts the oldest entries to fit the quota; does not cache what cannot fit, or on QuotaExceededError', async () => {
    const store = new MemoryStore();
    const { cache, logged } = cacheOf(store);
    const first = await load(cache, 1);
    const size = first.built.bytes.byteLength + first.built.externalData.reduce((n, b) => n + b.data.byteLength, 0);
    const second = await load(cache, 2);
    // Room for one more entry beside one of the two: the oldest goes.
    store.quota = { usage: 2 * size, quota: (3 * size) / 0.8 - 1 };
    const third = await load(cache, 3);
    expect((await store.list()).sort()).toEqual([second.built.key!, third.built.key!].sort());
    expect(logged).toEqual([
      expect.stringMatching(new RegExp(`evicted cached graph memory/${first.built.key} \\(\\d+\\.\\d MiB\\) to make room`)),
    ]);
    // Larger than the quota's share: built, not stored, nothing evicted.
    logged.length = 0;
    store.quota = { usage: 0, quota: size };
    const big = await load(cache, 4);
    expect([big.built.cached, big.builds, (await store.list()).length]).toEqual([false, 1, 2]);
    expect(logged).toEqual([
      expect.stringMatching(/graph ernie-vision \(.* MiB\) not cached in memory\/: the origin's storage quota has no room for it/),
    ]);
    // The browser refuses the write itself: nothing is left of it, the load goes on.
    logged.length = 0;
    store.quota = undefined;
    store.putError = new DOMException('quota', 'QuotaExceededError');
    const refused = await load(cache, 5);
    expect([refused.built.cached, refused.built.bytes.byteLength > 0, (await store.list()).length]).toEqual([false, true, 2]);
    expect(logged).toEqual([
      expect.stringMatching(/graph ernie-vision .* not cached in memory\/: the origin's storage quota was exceeded/),
    ]);
  });
});
