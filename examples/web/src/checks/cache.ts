// The page graph cache through the real Origin Private File System: ERNIE-tiny loaded twice from its URL in one
// page; the first load builds its graphs and stores them, the second opens its sessions from OPFS and reads no
// tensor from the network (only the safetensors header, which the checkpoint reads at open), with the same
// logits. Runs in the page only (it needs OPFS); the runner checks the counts it returns.
import { loadPretrained, type NamedTensors } from '@vlmkit/models';
import { urlFiles, urlSource } from '@vlmkit/safetensors';
import { FIXTURE_LOAD, readTensors } from './models.js';

/** The OPFS folder the check uses (removed before and after), apart from the default 'vlmkit' one. */
export const CACHE_CHECK_FOLDER = 'vlmkit-cache-check';

/** What one load fetched of the weights file. */
export interface LoadFetches {
  /** Requests for model.safetensors, and the bytes their responses carried (Content-Length). */
  requests: number;
  bytes: number;
  /** Range requests that start past the header: tensor reads. */
  tensorRequests: number;
  loadMs: number;
}

export interface CacheCheckResult {
  /** Bytes 0 .. dataStart of model.safetensors are its header (8 + the header's JSON). */
  dataStart: number;
  first: LoadFetches;
  second: LoadFetches;
  /** The OPFS folder's entries after the first load (one per graph), each with its files. */
  entries: Record<string, string[]>;
  /** max |a - b| of the two loads' logits on the text-only case, and their count. */
  maxAbsDiff: number;
  logits: number;
}

interface Dir {
  getDirectoryHandle(name: string, o?: { create?: boolean }): Promise<Dir>;
  removeEntry(name: string, o?: { recursive?: boolean }): Promise<void>;
  entries(): AsyncIterable<[string, { kind: string }]>;
}

async function opfs(): Promise<Dir> {
  const storage = (globalThis as unknown as { navigator?: { storage?: { getDirectory?(): Promise<Dir> } } }).navigator?.storage;
  if (storage?.getDirectory === undefined) throw new Error('this page has no Origin Private File System (navigator.storage.getDirectory)');
  return storage.getDirectory();
}

async function listFolder(dir: Dir): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for await (const [name, h] of dir.entries()) {
    if (h.kind !== 'directory') continue;
    const files: string[] = [];
    for await (const [f] of (await dir.getDirectoryHandle(name)).entries()) files.push(f);
    out[name] = files.sort();
  }
  return out;
}

/** Counts the fetches of `weights` while `fn` runs (the page's own fetch, wrapped). */
async function counting<T>(weights: string, dataStart: number, fn: () => Promise<T>): Promise<{ value: T; fetches: LoadFetches }> {
  const fetches: LoadFetches = { requests: 0, bytes: 0, tensorRequests: 0, loadMs: 0 };
  const original = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const res = await original(input, init);
    if (url === weights) {
      fetches.requests++;
      fetches.bytes += Number(res.headers.get('content-length') ?? 0);
      const range = /bytes=(\d+)-/.exec(new Headers(init?.headers).get('range') ?? '');
      if (range === null || Number(range[1]) >= dataStart) fetches.tensorRequests++;
    }
    return res;
  };
  const t = performance.now();
  try {
    const value = await fn();
    fetches.loadMs = performance.now() - t;
    return { value, fetches };
  } finally {
    globalThis.fetch = original;
  }
}

/** The check: `fixtures` is where test-fixtures/ is served. */
export async function cacheCheck(fixtures: URL): Promise<CacheCheckResult> {
  const root = await opfs();
  await root.removeEntry(CACHE_CHECK_FOLDER, { recursive: true }).catch(() => undefined);
  const checkpoint = new URL('ernie-tiny/', fixtures);
  const weights = new URL('model.safetensors', checkpoint).href;
  const head = await urlSource(weights);
  const n = new DataView((await head.read(0, 8)).buffer).getBigUint64(0, true);
  const dataStart = 8 + Number(n);
  const inputs: NamedTensors = await readTensors(await urlSource(new URL('cases/text-only/inputs.safetensors', checkpoint)));
  const options = { device: 'wasm', ...FIXTURE_LOAD, cacheDir: `opfs:${CACHE_CHECK_FOLDER}` } as const;
  const run = () => loadPretrained(urlFiles(checkpoint), options);
  try {
    const first = await counting(weights, dataStart, run);
    const logits1 = await logitsOf(first.value, inputs);
    const entries = await listFolder(await root.getDirectoryHandle(CACHE_CHECK_FOLDER));
    const second = await counting(weights, dataStart, run);
    const logits2 = await logitsOf(second.value, inputs);
    let maxAbsDiff = logits1.length === logits2.length ? 0 : Number.POSITIVE_INFINITY;
    for (let i = 0; i < logits1.length; i++) maxAbsDiff = Math.max(maxAbsDiff, Math.abs(logits1[i]! - logits2[i]!));
    return { dataStart, first: first.fetches, second: second.fetches, entries, maxAbsDiff, logits: logits1.length };
  } finally {
    await root.removeEntry(CACHE_CHECK_FOLDER, { recursive: true }).catch(() => undefined);
  }
}

/** Forward's logits on `inputs`; the model is released after. */
async function logitsOf(model: Awaited<ReturnType<typeof loadPretrained>>, inputs: NamedTensors): Promise<Float32Array> {
  try {
    const out = await model.forwardNamed(inputs);
    const logits = out.logits;
    if (!logits || logits.dtype !== 'float32') throw new Error(`forward gave no float32 logits (outputs: ${Object.keys(out).join(', ')})`);
    return logits.data as Float32Array;
  } finally {
    await model.release();
  }
}
