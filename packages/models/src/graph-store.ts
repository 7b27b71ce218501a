// A page's graph cache, platform-free: the key, the entry and its verification over a small `GraphStore` (the
// Origin Private File System in a page: ./graph-cache.browser.ts; a Map in tests). What Node's disk cache
// (./graph-cache.node.ts) is for a directory, this is for a load from `ModelFiles` (URLs, picked files):
// built once, the graph's bytes and its external buffers (the weights, folded and quantized) are stored, so a
// later load of the same checkpoint opens its sessions from them and reads no weight from the network.
//
// The key, as Node's (./cache-key.node.ts), reads no weight byte: the graph as the builders wrote it, before
// its passes (nodes, initializer descriptions, the passes waiting and the code that runs them), the checkpoint's
// files by name and `ByteSource.stamp` (ETag or Last-Modified for a URL, size and lastModified for a File).
// A checkpoint whose version cannot be told (a URL answered without ETag and Last-Modified, a Blob without
// lastModified) is not cached: the same name could hold other bytes next time.
//
// An entry is `model.onnx` (the graph's bytes), `data.bin` (the external buffers one after another) and
// `manifest.json`, written last: files without a manifest are an unfinished write and never served.
import * as onnxGraph from '@vlmkit/onnx-graph';
import { type ComputeDType, createSha256, deferredPassKey, type ExternalBuffer, type Graph } from '@vlmkit/onnx-graph';

/** Bumped when the key or the entry changes: entries of another format are removed, never read. */
export const STORE_FORMAT = 1;
/** Entries kept per model name and checkpoint (Node's `keep`). */
export const KEEP = 3;
/** Files of an unfinished write older than this are another page's that died; removed when the store is pruned. */
const STALE_MS = 3600_000;
/** The share of the origin's quota the cache fills before it evicts its oldest entries. */
const QUOTA_SHARE = 0.8;

/** One stored file: its size and ranges of it. */
export interface StoredFile {
  readonly size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** What a store holds under one key. */
export interface StoredEntry {
  /** manifest.json's text; undefined while the entry is unfinished (its files written, the manifest not yet). */
  readonly manifest: string | undefined;
  /** The newest modification time of its files (ms). */
  readonly modified: number;
  file(name: string): Promise<StoredFile | undefined>;
}

/** Where entries live: OPFS in a page, a Map in tests. Keys are hex digests. */
export interface GraphStore {
  /** For messages: 'OPFS vlmkit/'. */
  readonly name: string;
  get(key: string): Promise<StoredEntry | undefined>;
  /** Writes `files` (each the concatenation of its chunks), each atomically, then `manifest` last. A failure part-way leaves no manifest. */
  put(key: string, files: Record<string, Uint8Array[]>, manifest: string): Promise<void>;
  delete(key: string): Promise<void>;
  list(): Promise<string[]>;
  /** The origin's storage use and quota (`navigator.storage.estimate()`), where known. */
  estimate?(): Promise<{ usage: number; quota: number } | undefined>;
}

/** What a session is opened from: the graph's bytes, its external buffers, and how it computes. */
export interface MemoryBuild {
  bytes: Uint8Array;
  externalData: ExternalBuffer[];
  quantized: boolean;
  computeDtype: ComputeDType;
}

/** The checkpoint's weight files and their versions (`Checkpoint.files()`, `Checkpoint.stamps()`). */
export interface CheckpointVersion {
  files(): string[];
  stamps(): string[];
}

interface Hashed {
  size: number;
  sha256: string;
}

interface Manifest {
  format: number;
  key: string;
  name: string;
  checkpoint: string;
  createdAt: number;
  computeDtype: ComputeDType;
  quantized: boolean;
  model: Hashed;
  /** data.bin: the external buffers in order, each hashed alone (one-shot WebCrypto digests of what is read). */
  data: { size: number; buffers: (Hashed & { path: string; offset: number })[] };
}

/**
 * The key of `g` built from a checkpoint of these files, or why it has none (a file whose version is unknown).
 * Computed before the graph's deferred passes run (a hit skips them).
 */
export function storeKey(g: Graph, checkpoint: CheckpointVersion): { key: string } | { uncacheable: string } {
  const files = checkpoint.files();
  const stamps = checkpoint.stamps();
  const h = createSha256().update(describeGraph(g));
  for (const [i, file] of files.entries()) {
    const stamp = stamps[i] ?? '';
    if (/^(?:size:\d+|blob:\d+)$/.test(stamp)) {
      return {
        uncacheable: `${file} has no version to key it by (${stamp}: a server without ETag and Last-Modified, or a Blob without lastModified)`,
      };
    }
    h.update(`shard:${file}:${stamp}\n`);
  }
  return { key: h.hex().slice(0, 32) };
}

/** `g` as built (Node's `describe`): nodes, inputs, outputs, initializers and where each lies, the passes waiting. */
export function describeGraph(g: Graph): string {
  const snap = g.snapshot();
  const h = createSha256();
  h.update(JSON.stringify({ format: STORE_FORMAT, name: snap.name, opset: snap.opset, domains: snap.domains, nodes: snap.nodes }));
  h.update(JSON.stringify([...snap.inputs, ...snap.outputs].map((v) => [v.name, v.dtype, v.shape])));
  h.update(`passes:${deferredPassKey(g)}:${codeDigest()}`);
  if (g.computeDtype !== 'float32') h.update(`compute-dtype:${g.computeDtype}`);
  for (const { name, ref } of snap.initializers) {
    let where: unknown = ref.kind;
    if (ref.kind === 'file') where = [ref.kind, ref.path, ref.byteOffset, ref.byteLength];
    else if (ref.kind === 'source') where = [ref.kind, ref.source.name, ref.source.stamp, ref.byteOffset, ref.byteLength];
    // A 'data' tensor's bytes are small constants the builder wrote; hashed, as the graph's own content.
    else if (ref.kind === 'data') where = [ref.kind, sha256Sync(new Uint8Array(ref.data.buffer, ref.data.byteOffset, ref.data.byteLength))];
    h.update(JSON.stringify([name, ref.dtype, ref.shape, where]));
  }
  return h.hex();
}

let code: string | undefined;
/**
 * The code of @vlmkit/onnx-graph's exports (passes, folding, serialization), as the bundle holds it: another
 * version of them may write another graph from the same input (Node hashes the package's files instead; a page
 * has none). Helpers a module does not export are covered only through the exports that call them.
 */
function codeDigest(): string {
  if (code === undefined) {
    const h = createSha256();
    for (const [name, value] of Object.entries(onnxGraph).sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (typeof value === 'function') h.update(`${name}\0${Function.prototype.toString.call(value)}\0`);
    }
    code = h.hex().slice(0, 16);
  }
  return code;
}

function sha256Sync(bytes: Uint8Array): string {
  return createSha256().update(bytes).hex();
}

/** SHA-256 of `bytes` in hex: WebCrypto's native digest where there is one (a secure context, Node), else JS. */
export async function sha256(bytes: Uint8Array): Promise<string> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) return sha256Sync(bytes);
  const digest = new Uint8Array(await subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

export interface PageCacheOptions {
  logger: (msg: string) => void;
  keep?: number | undefined;
}

/** The graph cache of a page over one store. */
export class PageGraphCache {
  constructor(
    readonly store: GraphStore,
    private readonly options: PageCacheOptions,
  ) {}

  // Every hit is verified whole: each size and the SHA-256 of model.onnx and of each buffer of data.bin. Node
  // re-hashes its .onnx.data only when the file's stamp changed (ctime catches any write); a page has no such
  // stamp: OPFS's lastModified stays as it was through an in-place write (createWritable with
  // keepExistingData, measured in Chromium 150). WebCrypto's digest is native: 0.42 s per 256 MiB here
  // (2-core Xeon), small beside creating the session and far below building the graph again.

  log(msg: string): void {
    this.options.logger(msg);
  }

  /** The entry of `key`, verified; a damaged one is removed (and logged) and reads as missing. */
  async get(key: string): Promise<MemoryBuild | undefined> {
    const entry = await this.store.get(key);
    if (entry?.manifest === undefined) return undefined;
    const found = await this.verify(key, entry);
    if (typeof found !== 'string') return found;
    this.options.logger(`cached graph ${this.store.name}${key} is damaged (${found}); building it again`);
    await this.store.delete(key);
    return undefined;
  }

  private async verify(key: string, entry: StoredEntry): Promise<MemoryBuild | string> {
    const m = manifestShape(entry.manifest);
    if (m === undefined) return 'manifest.json is not a manifest';
    if (m.format !== STORE_FORMAT) return `entry format ${m.format}, expected ${STORE_FORMAT}`;
    if (m.key !== key) return `manifest.json names the key ${m.key}`;
    const model = await entry.file('model.onnx');
    if (model === undefined) return 'model.onnx is missing';
    if (model.size !== m.model.size) return `model.onnx has ${model.size} bytes, ${m.model.size} were written`;
    const bytes = await model.read(0, model.size);
    if ((await sha256(bytes)) !== m.model.sha256) return 'model.onnx does not have the sha256 it was written with';
    const externalData: ExternalBuffer[] = [];
    // Checked even when it should be empty (a graph without external buffers): nothing else may have grown it.
    const data = await entry.file('data.bin');
    if (data === undefined && m.data.size > 0) return 'data.bin is missing';
    if (data !== undefined && data.size !== m.data.size) return `data.bin has ${data.size} bytes, ${m.data.size} were written`;
    if (data !== undefined) {
      for (const b of m.data.buffers) {
        const part = await data.read(b.offset, b.size);
        if ((await sha256(part)) !== b.sha256) return `data.bin's buffer ${b.path} does not have the sha256 it was written with`;
        externalData.push({ path: b.path, data: part });
      }
    }
    return { bytes, externalData, quantized: m.quantized, computeDtype: m.computeDtype };
  }

  /**
   * Stores `built` under `key` and prunes; true when stored. What cannot be stored (the quota, the storage
   * failing) is logged and the load goes on without it.
   */
  async put(key: string, name: string, checkpoint: string, built: MemoryBuild): Promise<boolean> {
    const offset = built.externalData.reduce((n, b) => n + b.data.byteLength, 0);
    const size = built.bytes.byteLength + offset;
    if (!(await this.makeRoom(key, size))) {
      this.options.logger(`graph ${name} (${mib(size)}) not cached in ${this.store.name}: the origin's storage quota has no room for it`);
      return false;
    }
    const buffers: Manifest['data']['buffers'] = [];
    let at = 0;
    for (const b of built.externalData) {
      buffers.push({ path: b.path, offset: at, size: b.data.byteLength, sha256: await sha256(b.data) });
      at += b.data.byteLength;
    }
    const modelHash = await sha256(built.bytes);
    // A stale or unfinished entry of this key is removed first, manifest and all, so that none describes new files.
    await this.store.delete(key);
    try {
      await this.store.put(
        key,
        { 'model.onnx': [built.bytes], 'data.bin': built.externalData.map((b) => b.data) },
        JSON.stringify({
          format: STORE_FORMAT,
          key,
          name,
          checkpoint,
          createdAt: Date.now(),
          computeDtype: built.computeDtype,
          quantized: built.quantized,
          model: { size: built.bytes.byteLength, sha256: modelHash },
          data: { size: offset, buffers },
        } satisfies Manifest),
      );
    } catch (e) {
      await this.store.delete(key).catch(() => undefined);
      const why = isQuotaError(e)
        ? "the origin's storage quota was exceeded"
        : `the store failed: ${e instanceof Error ? e.message : String(e)}`;
      this.options.logger(`graph ${name} (${mib(size)}) not cached in ${this.store.name}: ${why}`);
      return false;
    }
    await this.prune(name, checkpoint);
    return true;
  }

  /** Entries of every key, oldest first; unfinished and foreign ones removed when stale. */
  private async entries(): Promise<{ key: string; m: Manifest | undefined; modified: number }[]> {
    const out: { key: string; m: Manifest | undefined; modified: number }[] = [];
    for (const key of await this.store.list()) {
      const e = await this.store.get(key);
      if (e === undefined) continue;
      out.push({ key, m: manifestShape(e.manifest), modified: e.modified });
    }
    return out.sort((a, b) => (a.m?.createdAt ?? a.modified) - (b.m?.createdAt ?? b.modified));
  }

  /**
   * Keeps the newest `keep` entries of `name` from `checkpoint`; removes entries of another format, and
   * unfinished ones (no manifest) once they are an hour old (a page closed while writing).
   */
  async prune(name: string, checkpoint: string): Promise<void> {
    const keep = this.options.keep ?? KEEP;
    const mine: string[] = [];
    for (const { key, m, modified } of await this.entries()) {
      const stale = m === undefined ? Date.now() - modified > STALE_MS : m.format !== STORE_FORMAT;
      if (stale) await this.store.delete(key);
      else if (m?.name === name && m.checkpoint === checkpoint) mine.push(key);
    }
    for (const key of mine.slice(0, Math.max(0, mine.length - keep))) {
      await this.store.delete(key);
      this.options.logger(`removed superseded cached graph ${this.store.name}${key}`);
    }
  }

  /** Evicts the oldest other entries until `size` more bytes fit in the quota's share; false when they cannot. */
  private async makeRoom(key: string, size: number): Promise<boolean> {
    const estimate = await this.store.estimate?.().catch(() => undefined);
    if (estimate === undefined) return true;
    const limit = estimate.quota * QUOTA_SHARE;
    let usage = estimate.usage;
    if (usage + size <= limit) return true;
    if (size > limit) return false;
    for (const e of await this.entries()) {
      if (e.key === key) continue;
      const bytes = e.m ? e.m.model.size + e.m.data.size : 0;
      await this.store.delete(e.key);
      this.options.logger(`evicted cached graph ${this.store.name}${e.key} (${mib(bytes)}) to make room`);
      usage -= bytes;
      if (usage + size <= limit) return true;
    }
    return usage + size <= limit;
  }
}

/** The page cache's side of a memory build: a hit is served, a miss built by `build` and stored. */
export async function cachedBuild(
  cache: PageGraphCache | undefined,
  g: Graph,
  name: string,
  checkpoint: { root: string; version: CheckpointVersion | undefined },
  build: () => Promise<MemoryBuild>,
): Promise<MemoryBuild & { cached: boolean; key?: string }> {
  if (cache === undefined || checkpoint.version === undefined) return { ...(await build()), cached: false };
  const k = storeKey(g, checkpoint.version);
  if ('uncacheable' in k) {
    cache.log(`graph ${name} not cached: ${k.uncacheable}`);
    return { ...(await build()), cached: false };
  }
  // A store that fails (another tab holding a file, storage cleared under the page) costs the cache, never the load.
  const failed = (what: string) => (e: unknown) => {
    cache.log(
      `graph ${name}: ${what} ${cache.store.name}${k.key} failed (${e instanceof Error ? e.message : String(e)}); loading without it`,
    );
    return undefined;
  };
  const hit = await cache.get(k.key).catch(failed('reading'));
  if (hit) return { ...hit, cached: true, key: k.key };
  const built = await build();
  await cache.put(k.key, name, checkpoint.root, built).catch(failed('storing'));
  return { ...built, cached: false, key: k.key };
}

function isQuotaError(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { name?: unknown }).name === 'QuotaExceededError';
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/** `text` as a manifest when it has a manifest's shape; else undefined (removed as damaged, never a crash). */
function manifestShape(text: string | undefined): Manifest | undefined {
  if (text === undefined) return undefined;
  let m: Partial<Manifest>;
  try {
    m = JSON.parse(text) as Partial<Manifest>;
  } catch {
    return undefined;
  }
  if (typeof m !== 'object' || m === null || typeof m.format !== 'number') return undefined;
  if (m.format !== STORE_FORMAT) return m as Manifest;
  const num = (x: unknown) => typeof x === 'number' && Number.isFinite(x);
  const hashed = (x: unknown) => typeof x === 'object' && x !== null && num((x as Hashed).size) && typeof (x as Hashed).sha256 === 'string';
  const ok =
    typeof m.key === 'string' &&
    typeof m.name === 'string' &&
    typeof m.checkpoint === 'string' &&
    num(m.createdAt) &&
    typeof m.computeDtype === 'string' &&
    typeof m.quantized === 'boolean' &&
    hashed(m.model) &&
    typeof m.data === 'object' &&
    m.data !== null &&
    num(m.data.size) &&
    Array.isArray(m.data.buffers) &&
    m.data.buffers.every((b) => hashed(b) && typeof b.path === 'string' && num(b.offset));
  return ok ? (m as Manifest) : undefined;
}
