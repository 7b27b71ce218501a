// The on-disk cache of built graphs. Hub snapshot folders are shared and may be read-only, so graphs go to a
// user cache directory (XDG base directory spec: $XDG_CACHE_HOME, else ~/.cache), keyed by the checkpoint's
// content, not its path and mtime: a checkpoint replaced in place (same path, size and mtime, `cp -p`) must not
// be served another checkpoint's graph. Layout (one flat folder, so an explicit cacheDir equal to the model
// directory still lets external data point straight into the .safetensors files):
//
//   <root>/vlmkit-<name>-<key>.onnx        the graph
//   <root>/vlmkit-<name>-<key>.onnx.data   its external data, when it has any: weights as ORT uses them
//                                           (bf16 -> float32 and transposes folded), tensors of 1 MiB and
//                                           more 4 KiB aligned so that ORT memory-maps them
//   <root>/vlmkit-<name>-<key>.json        the entry: what it was built from, the digests of the two files above;
//                                           written last, so an entry without it is an unfinished build
//   <root>/vlmkit-blob-<sha256>.safetensors a hard link of a checkpoint file (same filesystem only): tensors used
//                                           as stored point into it, so they are not copied; shared by entries
//   <root>/digests/<hash of path>.json     remembered sha256 of a checkpoint file, by path + size + mtime + ctime + inode
import { createHash } from 'node:crypto';
import { access, constants, link, mkdir, open, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { type Graph, saveModel } from '@vlmkit/onnx-graph';
import { ModelError } from './errors.js';

/**
 * Bumped when the key, the entry format or what is stored changes: older entries then no longer match and are
 * cleaned. 3: weights stored as ORT uses them (Cast/Transpose of initializers folded), page-aligned.
 */
const FORMAT = 3;
/** Unfinished builds of a process that is gone, or older than this, are removed. */
const STALE_TMP_MS = 24 * 3600_000;
const HASH_CHUNK = 4 * 2 ** 20;
const BLOB_PREFIX = 'vlmkit-blob-';

/** `$XDG_CACHE_HOME/vlmkit`, else `~/.cache/vlmkit`. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CACHE_HOME;
  // The spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  return xdg?.startsWith('/') ? join(xdg, 'vlmkit') : join(homedir(), '.cache', 'vlmkit');
}

/** What identifies a file's bytes without reading them; ctime changes on every write and cannot be set back. */
interface Stamp {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  dev: number;
}

async function stampOf(path: string): Promise<Stamp> {
  const s = await stat(path);
  return { size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs, ino: s.ino, dev: s.dev };
}

function sameStamp(a: Stamp | undefined, b: Stamp): boolean {
  return a !== undefined && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino && a.dev === b.dev;
}

/**
 * sha256 of a whole file in one pass through a reused 4 MiB buffer (bounded memory; measured ~1 GB/s on
 * a 2-core x86 with SHA-NI, where a read stream of fresh chunks gave about half).
 */
export async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  const fd = await open(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(HASH_CHUNK);
    for (;;) {
      const { bytesRead } = await fd.read(buf, 0, HASH_CHUNK);
      if (bytesRead === 0) break;
      h.update(buf.subarray(0, bytesRead));
    }
  } finally {
    await fd.close();
  }
  return h.digest('hex');
}

async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}

async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

interface DigestMemo extends Stamp {
  path: string;
  sha256: string;
}

interface FileRecord {
  size: number;
  sha256: string;
}

interface Blob {
  name: string;
  source: string;
  sha256: string;
}

interface Entry {
  format: number;
  name: string;
  key: string;
  /** The checkpoint directory it was built from (realpath), and every input file's digest. */
  checkpoint: string;
  inputs: Record<string, FileRecord>;
  onnx: FileRecord;
  data?: FileRecord & { stamp: Stamp };
  /** Hard links of checkpoint files the graph's external data may point into: name, the file, its sha256. */
  blobs?: Blob[];
  /** The float type the graph computes in (onnx-graph's `ComputeDType`; part of the key). */
  computeDtype?: string;
  createdAt: number;
}

export interface GraphCacheOptions {
  /** Told about rebuilds of damaged entries and about cleaning. */
  logger?: ((msg: string) => void) | undefined;
  /**
   * How much of a cached `.onnx.data` is re-read on load: 'auto' (default) hashes it again only when its
   * size, mtime, ctime or inode differ from when it was written or last verified; 'full' always hashes it.
   * The `.onnx` itself is always hashed.
   */
  verify?: 'auto' | 'full' | undefined;
  /** Entries kept per model name and checkpoint directory; older ones are removed (default 3). */
  keep?: number | undefined;
}

export interface CacheHit {
  modelPath: string;
  /** True when the graph came from the cache; false when it was (re)built now. */
  cached: boolean;
  /** Bytes of the .onnx and its .onnx.data: what a session on it loads (maps) as weights. */
  bytes: number;
}

/** A cache of built graphs in one folder. */
export class GraphCache {
  private readonly log: (msg: string) => void;

  private constructor(
    readonly root: string,
    private readonly realRoot: string,
    private readonly options: GraphCacheOptions,
  ) {
    this.log = options.logger ?? ((m) => process.stderr.write(`vlmkit: ${m}\n`));
  }

  static async open(root: string | undefined, options: GraphCacheOptions = {}): Promise<GraphCache> {
    const dir = root ?? defaultCacheDir();
    try {
      await mkdir(join(dir, 'digests'), { recursive: true });
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      const why = err.code === 'EEXIST' || err.code === 'ENOTDIR' ? 'it (or a parent) is a file, not a directory' : err.message;
      throw new ModelError(
        'BAD_CACHE_DIR',
        `graph cache directory ${dir} cannot be used: ${why}. Pass --cache-dir DIR (cacheDir) with a writable directory.`,
      );
    }
    try {
      await access(join(dir, 'digests'), constants.W_OK);
    } catch {
      throw new ModelError(
        'BAD_CACHE_DIR',
        `graph cache directory ${dir} is not writable. Pass --cache-dir DIR (cacheDir) with a writable directory.`,
      );
    }
    return new GraphCache(dir, await realpath(dir), options);
  }

  /**
   * The content digest of a file: remembered by path + size + mtime + ctime + inode, so an 8 GB checkpoint
   * is read once; hashed again when any of those change.
   */
  async fileDigest(path: string): Promise<string> {
    const real = await realpath(path);
    const stamp = await stampOf(real);
    const memoPath = join(this.root, 'digests', `${createHash('sha256').update(real).digest('hex').slice(0, 32)}.json`);
    const memo = await readJson<DigestMemo>(memoPath);
    if (memo && memo.path === real && sameStamp(memo, stamp)) return memo.sha256;
    const sha256 = await sha256File(real);
    // A file written while it was hashed has a new stamp: remember nothing then.
    if (sameStamp(stamp, await stampOf(real))) await writeAtomic(memoPath, JSON.stringify({ path: real, ...stamp, sha256 }));
    return sha256;
  }

  /**
   * The key of a graph built from `checkpointDir`: its nodes, inputs, outputs and initializer descriptions,
   * with every file an initializer reads named by its content digest, plus the digests of every
   * .safetensors file of the checkpoint (lazy tensors read those too) and of `extraFiles`.
   */
  async key(
    g: Graph,
    checkpointDir: string,
    extraFiles: readonly string[] = [],
  ): Promise<{ key: string; inputs: Record<string, FileRecord> }> {
    const inputs: Record<string, FileRecord> = {};
    const digest = async (path: string): Promise<string> => {
      const real = await realpath(path);
      const known = inputs[real];
      if (known) return known.sha256;
      const sha256 = await this.fileDigest(real);
      inputs[real] = { size: (await stat(real)).size, sha256 };
      return sha256;
    };
    const snap = g.snapshot();
    const h = createHash('sha256');
    h.update(JSON.stringify({ format: FORMAT, name: snap.name, opset: snap.opset, domains: snap.domains, nodes: snap.nodes }));
    h.update(JSON.stringify([...snap.inputs, ...snap.outputs].map((v) => [v.name, v.dtype, v.shape])));
    // The nodes already differ per compute dtype (casts, input types); stated too, so no two dtypes can share a
    // key. Only when not float32: float32 keys stay those of the entries built before the option existed.
    if (g.computeDtype !== 'float32') h.update(`compute-dtype:${g.computeDtype}`);
    for (const { name, ref } of snap.initializers) {
      const where = ref.kind === 'file' ? [await digest(ref.path), ref.byteOffset, ref.byteLength] : ref.kind;
      h.update(JSON.stringify([name, ref.dtype, ref.shape, where]));
    }
    const shards = (await readdir(checkpointDir)).filter((f) => f.endsWith('.safetensors')).sort();
    for (const f of shards) h.update(`shard:${f}:${await digest(join(checkpointDir, f))}`);
    for (const f of extraFiles) h.update(`extra:${basename(f)}:${await digest(f)}`);
    return { key: h.digest('hex').slice(0, 24), inputs };
  }

  /** The graph's .onnx in the cache: verified when found, built (and the entry written) when missing or damaged. */
  async get(g: Graph, name: string, checkpointDir: string, extraFiles: readonly string[] = []): Promise<CacheHit> {
    const checkpoint = await realpath(checkpointDir);
    await this.clean();
    const { key, inputs } = await this.key(g, checkpoint, extraFiles);
    const base = `vlmkit-${name}-${key}`;
    const modelPath = join(this.root, `${base}.onnx`);
    const entryPath = join(this.root, `${base}.json`);
    const entry = await readJson<Entry>(entryPath);
    if (entry) {
      const problem = await this.verify(entry, base);
      if (problem === undefined) return { modelPath, cached: true, bytes: entryBytes(entry) };
      this.log(`cached graph ${join(this.root, base)}.* is damaged (${problem}); rebuilding it`);
      await this.remove(base);
    }
    const built = await this.build(g, { name, key, checkpoint, inputs }, base);
    await this.prune(name, checkpoint);
    return { modelPath, cached: false, bytes: entryBytes(built) };
  }

  /**
   * Hard links of the checkpoint's .safetensors files in the cache directory, named by content, so that
   * external data can point into them (ORT reads external data only inside the model's directory). None
   * where the cache is on another filesystem or links are refused: tensors are then copied.
   */
  private async linkBlobs(inputs: Record<string, FileRecord>): Promise<Blob[]> {
    const out: Blob[] = [];
    for (const [source, rec] of Object.entries(inputs)) {
      // Files already in the cache directory (cacheDir = the model directory) are pointed into directly.
      if (!source.endsWith('.safetensors') || dirname(source) === this.realRoot) continue;
      const b: Blob = { name: `${BLOB_PREFIX}${rec.sha256.slice(0, 32)}.safetensors`, source, sha256: rec.sha256 };
      const path = join(this.root, b.name);
      if ((await this.verifyBlob(b)) === undefined) {
        out.push(b);
        continue;
      }
      await rm(path, { force: true });
      try {
        await link(source, path);
        out.push(b);
      } catch {
        // EXDEV (another filesystem), EPERM: the tensors are copied instead.
      }
    }
    return out;
  }

  /** Undefined when the link holds the bytes it is named after: the checkpoint file itself (same inode), or hashed. */
  private async verifyBlob(b: Blob): Promise<string | undefined> {
    const path = join(this.root, b.name);
    let s: Stamp;
    try {
      s = await stampOf(path);
    } catch {
      return `${b.name} is missing`;
    }
    const src = await stampOf(b.source).catch(() => undefined);
    // The checkpoint file itself: its content is what the key was computed from on this load.
    if (src && src.ino === s.ino && src.dev === s.dev) return undefined;
    return (await this.fileDigest(path)) === b.sha256 ? undefined : `${b.name} does not have the sha256 it is named after`;
  }

  /** Undefined when the entry's files are what was written; else what is wrong. */
  private async verify(entry: Entry, base: string): Promise<string | undefined> {
    if (entry.format !== FORMAT) return `entry format ${entry.format}, expected ${FORMAT}`;
    const onnx = join(this.root, `${base}.onnx`);
    const check = async (path: string, rec: FileRecord): Promise<string | undefined> => {
      let size: number;
      try {
        size = (await stat(path)).size;
      } catch {
        return `${basename(path)} is missing`;
      }
      if (size !== rec.size) return `${basename(path)} has ${size} bytes, ${rec.size} were written`;
      if ((await sha256File(path)) !== rec.sha256) return `${basename(path)} does not have the sha256 it was written with`;
      return undefined;
    };
    const bad = await check(onnx, entry.onnx);
    if (bad) return bad;
    for (const b of entry.blobs ?? []) {
      const problem = await this.verifyBlob(b);
      if (problem) return problem;
    }
    if (entry.data) {
      const dataPath = `${onnx}.data`;
      let stamp: Stamp;
      try {
        stamp = await stampOf(dataPath);
      } catch {
        return `${basename(dataPath)} is missing`;
      }
      // Unchanged since it was written or last verified: its bytes are the ones hashed then.
      if (this.options.verify !== 'full' && sameStamp(entry.data.stamp, stamp)) return undefined;
      const badData = await check(dataPath, entry.data);
      if (badData) return badData;
      await writeAtomic(join(this.root, `${base}.json`), JSON.stringify({ ...entry, data: { ...entry.data, stamp } }));
    }
    return undefined;
  }

  /**
   * Written under temporary names and renamed into place, data first and the entry last: a concurrent
   * process building the same key writes identical bytes, and a reader never sees a partial file.
   */
  private async build(g: Graph, e: Pick<Entry, 'name' | 'key' | 'checkpoint' | 'inputs'>, base: string): Promise<Entry> {
    const tag = `tmp-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    const modelPath = join(this.root, `${base}.onnx`);
    const dataFile = `${base}.onnx.data`;
    const tmpModel = join(this.root, `${base}.${tag}.onnx`);
    const tmpData = join(this.root, `${dataFile}.${tag}`);
    try {
      // Weights stored as ORT will use them (bf16 -> float32 casts and transposes done once, here), 4 KiB
      // aligned so ORT memory-maps them: no per-load folding, no bf16 copy beside the float32 one.
      const blobs = await this.linkBlobs(e.inputs);
      const fileAliases = new Map(blobs.map((b) => [b.source, join(this.realRoot, b.name)]));
      const saved = await saveModel(g, tmpModel, { dataFile, writeDataTo: `${dataFile}.${tag}`, fold: true, fileAliases });
      const onnx: FileRecord = { size: (await stat(tmpModel)).size, sha256: await sha256File(tmpModel) };
      let data: Entry['data'];
      if (saved.dataPath !== undefined) {
        const record = { size: (await stat(tmpData)).size, sha256: await sha256File(tmpData) };
        await rename(tmpData, join(this.root, dataFile));
        data = { ...record, stamp: await stampOf(join(this.root, dataFile)) };
      }
      await rename(tmpModel, modelPath);
      const used = saved.linkedBytes > 0 ? blobs : [];
      const entry: Entry = {
        format: FORMAT,
        ...e,
        onnx,
        ...(data ? { data } : {}),
        ...(used.length > 0 ? { blobs: used } : {}),
        computeDtype: g.computeDtype,
        createdAt: Date.now(),
      };
      await writeAtomic(join(this.root, `${base}.json`), JSON.stringify(entry, null, 1));
      return entry;
    } finally {
      await rm(tmpModel, { force: true });
      await rm(tmpData, { force: true });
    }
  }

  private async remove(base: string): Promise<void> {
    // The entry first: without it the rest is an unfinished build, never served.
    for (const suffix of ['.json', '.onnx', '.onnx.data']) await rm(join(this.root, `${base}${suffix}`), { force: true });
  }

  /**
   * Removes what a killed build left (temporary files of a process that is gone, or a day old) and graphs
   * whose entry is missing (a build that died between renames) once they are a day old.
   */
  async clean(): Promise<string[]> {
    const removed: string[] = [];
    const now = Date.now();
    const names = await readdir(this.root);
    const entries = new Set(names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -'.json'.length)));
    for (const n of names) {
      if (!n.startsWith('vlmkit-')) continue;
      const path = join(this.root, n);
      const tmp = /\.tmp-(\d+)-[a-z0-9]+/.exec(n);
      let stale = false;
      if (tmp) {
        const age = now - (await stat(path).catch(() => ({ mtimeMs: now }))).mtimeMs;
        stale = !alive(Number(tmp[1])) || age > STALE_TMP_MS;
      } else {
        const base = n.replace(/\.onnx(\.data)?$/, '');
        if (base !== n && !entries.has(base)) stale = now - (await stat(path).catch(() => ({ mtimeMs: now }))).mtimeMs > STALE_TMP_MS;
      }
      if (stale) {
        await rm(path, { force: true });
        removed.push(n);
      }
    }
    if (removed.length > 0) this.log(`removed ${removed.length} unfinished graph cache file(s) from ${this.root}: ${removed.join(', ')}`);
    return removed;
  }

  /**
   * Keeps the newest `keep` entries per model name and checkpoint directory, and removes entries of that
   * name whose checkpoint files are gone or changed size (their key can no longer match).
   */
  private async prune(name: string, checkpoint: string): Promise<void> {
    const keep = this.options.keep ?? 3;
    const prefix = `vlmkit-${name}-`;
    const mine: { base: string; createdAt: number }[] = [];
    for (const n of await readdir(this.root)) {
      if (!n.startsWith(prefix) || !n.endsWith('.json') || n.includes('.tmp-')) continue;
      const base = n.slice(0, -'.json'.length);
      const e = await readJson<Entry>(join(this.root, n));
      let gone = e === undefined || e.format !== FORMAT;
      if (e && !gone) {
        for (const [path, rec] of Object.entries(e.inputs)) {
          const size = await stat(path).then(
            (s) => s.size,
            () => -1,
          );
          if (size !== rec.size) gone = true;
        }
      }
      if (gone) {
        await this.remove(base);
        this.log(`removed superseded cached graph ${base}`);
      } else if (e!.checkpoint === checkpoint) mine.push({ base, createdAt: e!.createdAt });
    }
    // Remembered digests of files that are gone.
    for (const n of await readdir(join(this.root, 'digests'))) {
      const memo = await readJson<DigestMemo>(join(this.root, 'digests', n));
      if (
        memo &&
        (await stat(memo.path).then(
          () => false,
          () => true,
        ))
      )
        await rm(join(this.root, 'digests', n), { force: true });
    }
    mine.sort((a, b) => b.createdAt - a.createdAt);
    for (const { base } of mine.slice(keep)) {
      await this.remove(base);
      this.log(`removed superseded cached graph ${base}`);
    }
    // Checkpoint links no entry points into any more.
    const names = await readdir(this.root);
    const referenced = new Set<string>();
    for (const n of names) {
      if (!n.startsWith('vlmkit-') || !n.endsWith('.json') || n.includes('.tmp-')) continue;
      for (const b of (await readJson<Entry>(join(this.root, n)))?.blobs ?? []) referenced.add(b.name);
    }
    for (const n of names) if (n.startsWith(BLOB_PREFIX) && !referenced.has(n)) await rm(join(this.root, n), { force: true });
  }
}

function entryBytes(e: Entry): number {
  return e.onnx.size + (e.data?.size ?? 0);
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
