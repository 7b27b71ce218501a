// The page graph cache through the real Origin Private File System: ERNIE-tiny loaded twice from its URL in one
// page; the first load builds its graphs and stores them, the second opens its sessions from OPFS and reads no
// tensor from the network (only the safetensors header, which the checkpoint reads at open), with the same
// logits. Then one byte of a stored entry is changed in place: the third load finds the entry damaged and
// builds that graph again (tensors fetched), still with the same logits. Runs in the page only (it needs OPFS);
// the runner checks the counts it returns.
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
  /** The third load, after one byte in the middle of the first entry's larger file was changed in place. */
  damaged: {
    entry: string;
    file: string;
    /** Whether the file's lastModified stayed as it was through the write (why a hit hashes every buffer). */
    lastModifiedKept: boolean;
    fetches: LoadFetches;
    maxAbsDiff: number;
  };
}

interface WritableFile {
  getFile(): Promise<{ size: number; lastModified: number; slice(a: number, b: number): { arrayBuffer(): Promise<ArrayBuffer> } }>;
  createWritable(o: { keepExistingData: boolean }): Promise<{
    write(o: { type: 'write'; position: number; data: Uint8Array }): Promise<void>;
    close(): Promise<void>;
  }>;
}

interface Dir {
  getDirectoryHandle(name: string, o?: { create?: boolean }): Promise<Dir>;
  getFileHandle(name: string): Promise<WritableFile>;
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
    const entry = Object.keys(entries).sort()[0] ?? '';
    const { file, lastModifiedKept } = await flipByte(await (await root.getDirectoryHandle(CACHE_CHECK_FOLDER)).getDirectoryHandle(entry));
    const third = await counting(weights, dataStart, run);
    const logits3 = await logitsOf(third.value, inputs);
    return {
      dataStart,
      first: first.fetches,
      second: second.fetches,
      entries,
      maxAbsDiff: maxAbsDiff(logits1, logits2),
      logits: logits1.length,
      damaged: { entry, file, lastModifiedKept, fetches: third.fetches, maxAbsDiff: maxAbsDiff(logits1, logits3) },
    };
  } finally {
    await root.removeEntry(CACHE_CHECK_FOLDER, { recursive: true }).catch(() => undefined);
  }
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = a.length === b.length ? 0 : Number.POSITIVE_INFINITY;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/**
 * Changes the middle byte of the entry's larger file in place (as a stray write of this origin's code would):
 * data.bin, or model.onnx where the graph has no external buffers (ERNIE-tiny's tensors are all under 1 MiB).
 */
async function flipByte(entry: Dir): Promise<{ file: string; lastModifiedKept: boolean }> {
  const [data, model] = [await entry.getFileHandle('data.bin'), await entry.getFileHandle('model.onnx')];
  const sizes = [(await data.getFile()).size, (await model.getFile()).size];
  const [file, handle, size] = sizes[0]! >= sizes[1]! ? ['data.bin', data, sizes[0]!] : ['model.onnx', model, sizes[1]!];
  const before = await handle.getFile();
  const at = Math.floor(size / 2);
  const byte = new Uint8Array(await before.slice(at, at + 1).arrayBuffer())[0]!;
  const w = await handle.createWritable({ keepExistingData: true });
  await w.write({ type: 'write', position: at, data: new Uint8Array([byte ^ 0xff]) });
  await w.close();
  return { file, lastModifiedKept: (await handle.getFile()).lastModified === before.lastModified };
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
