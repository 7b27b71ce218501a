// The page's graph cache store: the Origin Private File System (`navigator.storage.getDirectory()`), one
// folder per entry under the cache's folder (default `vlmkit/`): model.onnx, data.bin, manifest.json
// (./graph-store.ts says what they hold and how they are verified).
//
// OPFS rather than Cache Storage: a file is written from the graph's buffers one after another
// (`createWritable`, atomic: the bytes land in a swap file and replace the file only on `close()`) and read back
// by range (`File.slice`), one external buffer at a time, so neither side ever holds the entry twice or as one
// ArrayBuffer; Cache Storage stores whole Responses. Where OPFS or `createWritable` is missing (a browser
// without them, Node), there is no page cache: the graphs are built in memory on every load, as before.

import { ModelError } from './errors.js';
import type { GraphStore, StoredEntry, StoredFile } from './graph-store.js';
import { PageGraphCache } from './graph-store.js';

/** The subset of the File System Access API used here (the packages compile without the DOM lib). */
interface FileLike {
  readonly size: number;
  readonly lastModified: number;
  slice(start: number, end: number): { arrayBuffer(): Promise<ArrayBuffer> };
  text(): Promise<string>;
}
interface Writable {
  write(data: Uint8Array): Promise<void>;
  close(): Promise<void>;
  abort(): Promise<void>;
}
interface FileHandle {
  readonly kind: 'file';
  getFile(): Promise<FileLike>;
  createWritable?(): Promise<Writable>;
}
interface DirHandle {
  readonly kind: 'directory';
  getDirectoryHandle(name: string, o?: { create?: boolean }): Promise<DirHandle>;
  getFileHandle(name: string, o?: { create?: boolean }): Promise<FileHandle>;
  removeEntry(name: string, o?: { recursive?: boolean }): Promise<void>;
  entries(): AsyncIterable<[string, FileHandle | DirHandle]>;
}
interface StorageLike {
  getDirectory?(): Promise<DirHandle>;
  estimate?(): Promise<{ usage?: number; quota?: number }>;
}

const MANIFEST = 'manifest.json';
/** The default folder of the page cache in the origin's OPFS. */
export const DEFAULT_PAGE_CACHE = 'opfs:vlmkit';

function notFound(e: unknown): boolean {
  return typeof e === 'object' && e !== null && ['NotFoundError', 'TypeMismatchError'].includes((e as { name?: string }).name ?? '');
}

/** Entries of a page graph cache, each a folder of `root`. */
export class OpfsStore implements GraphStore {
  constructor(
    private readonly root: DirHandle,
    readonly name: string,
    private readonly storage: StorageLike,
  ) {}

  private async folder(key: string): Promise<DirHandle | undefined> {
    try {
      return await this.root.getDirectoryHandle(key);
    } catch (e) {
      if (notFound(e)) return undefined;
      throw e;
    }
  }

  async get(key: string): Promise<StoredEntry | undefined> {
    const dir = await this.folder(key);
    if (dir === undefined) return undefined;
    let manifest: string | undefined;
    let modified = 0;
    for await (const [name, h] of dir.entries()) {
      if (h.kind !== 'file') continue;
      const f = await h.getFile();
      modified = Math.max(modified, f.lastModified);
      if (name === MANIFEST) manifest = await f.text();
    }
    return { manifest, modified, file: (name) => this.file(dir, name) };
  }

  private async file(dir: DirHandle, name: string): Promise<StoredFile | undefined> {
    let f: FileLike;
    try {
      f = await (await dir.getFileHandle(name)).getFile();
    } catch (e) {
      if (notFound(e)) return undefined;
      throw e;
    }
    return {
      size: f.size,
      read: async (offset, length) => new Uint8Array(await f.slice(offset, offset + length).arrayBuffer()),
    };
  }

  async put(key: string, files: Record<string, Uint8Array[]>, manifest: string): Promise<void> {
    const dir = await this.root.getDirectoryHandle(key, { create: true });
    for (const [name, chunks] of Object.entries(files)) await write(dir, name, chunks);
    await write(dir, MANIFEST, [new TextEncoder().encode(manifest)]);
  }

  async delete(key: string): Promise<void> {
    const dir = await this.folder(key);
    if (dir === undefined) return;
    // The manifest first: without it what is left is an unfinished entry, never served.
    await dir.removeEntry(MANIFEST).catch((e: unknown) => {
      if (!notFound(e)) throw e;
    });
    await this.root.removeEntry(key, { recursive: true }).catch((e: unknown) => {
      if (!notFound(e)) throw e;
    });
  }

  async list(): Promise<string[]> {
    const keys: string[] = [];
    for await (const [name, h] of this.root.entries()) if (h.kind === 'directory' && /^[0-9a-f]+$/.test(name)) keys.push(name);
    return keys.sort();
  }

  async estimate(): Promise<{ usage: number; quota: number } | undefined> {
    const e = await this.storage.estimate?.();
    return e?.usage !== undefined && e.quota !== undefined ? { usage: e.usage, quota: e.quota } : undefined;
  }
}

/** Writes `name` in `dir` from `chunks` through one writable (atomic: the file is replaced on close). */
async function write(dir: DirHandle, name: string, chunks: Uint8Array[]): Promise<void> {
  const handle = await dir.getFileHandle(name, { create: true });
  const w = await handle.createWritable!();
  try {
    for (const c of chunks) await w.write(c);
    await w.close();
  } catch (e) {
    await w.abort().catch(() => undefined);
    throw e;
  }
}

/**
 * The page graph cache a load's `cacheDir` names: 'opfs:<folder>' (default 'opfs:vlmkit', a folder of the
 * origin's OPFS) or 'none' (off). undefined where there is no OPFS with `createWritable` (Node, an older
 * browser): logged once when it was asked for by name, silent by default.
 */
export async function openPageCache(
  cacheDir: string | undefined,
  options: { logger?: ((msg: string) => void) | undefined },
): Promise<PageGraphCache | undefined> {
  if (cacheDir === 'none') return undefined;
  const spec = cacheDir ?? DEFAULT_PAGE_CACHE;
  const storage = (globalThis as unknown as { navigator?: { storage?: StorageLike } }).navigator?.storage;
  const logger = options.logger ?? ((m: string) => console.warn(`vlmkit: ${m}`));
  if (storage?.getDirectory === undefined) {
    // Node (a load from ModelFiles there builds in memory; its path loads have the disk cache) or no OPFS.
    if (cacheDir !== undefined && (globalThis as unknown as { window?: unknown }).window !== undefined) {
      logger(`no graph cache: this browser has no Origin Private File System (navigator.storage.getDirectory)`);
    }
    return undefined;
  }
  const m = /^opfs:([A-Za-z0-9._-]+)$/.exec(spec);
  if (m === null || m[1] === '.' || m[1] === '..') {
    throw new ModelError(
      'BAD_LOAD_OPTIONS',
      `cacheDir '${spec}' is not a page's graph cache: in a browser it is 'opfs:<folder>' (default 'opfs:vlmkit', a folder of the origin's private file system) or 'none' (no cache).`,
    );
  }
  const folder = m[1]!;
  try {
    const root = await (await storage.getDirectory()).getDirectoryHandle(folder, { create: true });
    const probe = await root.getFileHandle('.probe', { create: true });
    if (typeof probe.createWritable !== 'function') {
      logger('no graph cache: this browser cannot write OPFS files from a page (FileSystemFileHandle.createWritable)');
      return undefined;
    }
    await root.removeEntry('.probe').catch(() => undefined);
    return new PageGraphCache(new OpfsStore(root, `OPFS ${folder}/`, storage), { logger });
  } catch (e) {
    // A private window or a storage policy may refuse OPFS: the load goes on without a cache.
    logger(`no graph cache: OPFS ${folder}/ cannot be opened (${e instanceof Error ? e.message : String(e)})`);
    return undefined;
  }
}
