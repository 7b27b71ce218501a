// The on-disk cache of built graphs. Hub snapshot folders are shared and may be read-only, so graphs go to a
// user cache directory (XDG base directory spec: $XDG_CACHE_HOME, else ~/.cache). The checkpoint is the weight
// store: every tensor a graph uses as stored (norms, embedding tables, a bf16 graph's weights) is read by ORT
// from the checkpoint's own .safetensors files, in place and memory-mapped. The cache holds the graphs and what
// the checkpoint does not: quantized blocks and scales, and the weights a Cast or Transpose reads, stored cast
// and transposed (fold). ORT could fold those at session creation instead, but at 1.29 it takes seconds per
// 256 MiB and keeps 1.4-2.5x the float32 weights in anonymous memory, where the stored copy is mapped page
// cache (measured: models README, "The graph cache"). Layout, one flat folder:
//
//   <root>/vlmkit-<name>-<key>.onnx        the graph; its external data locations are paths relative to one
//                                           folder above the cache and the checkpoint files (the entry's
//                                           `folder`), which ORT is given with the model's bytes
//   <root>/vlmkit-<name>-<key>.onnx.data   what the build produced, when anything: tensors of 1 MiB and more
//                                           4 KiB aligned so that ORT memory-maps them
//   <root>/vlmkit-<name>-<key>.json        the entry: the input files' stamps, the digests of the two files
//                                           above; written last, so an entry without it is an unfinished build
//   <root>/vlmkit-<name>-<key>.packed.*    with the profile's packedWeights 'cache': the model as ORT runs it,
//                                           with its packed weights (./packed-weights.node.ts), recorded in the
//                                           entry once written
//
// The key (cache-key.ts) reads no weight bytes.
// Nothing in the cache is an alias (hard link, symlink) of a user's file: the cache is disposable, and whatever
// a user or a tool does to a cache file must never reach a checkpoint.
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, realpath, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { type ComputeDType, everyNode, type Graph, relocateExternalData, runDeferredPasses, saveModel } from '@vlmkit/onnx-graph';
import { checkpointFiles, describeFileKind } from '@vlmkit/safetensors';
import { alive, type Entry, entryShape } from './cache-entry.node.js';
import {
  cacheFileStamp,
  entryFolder,
  externalLocations,
  type FileRecord,
  makeDirectory,
  readJson,
  readRegular,
  removeFile,
  renameOver,
  type Stamp,
  sameStamp,
  sha256File,
  stampOf,
  writeAtomic,
} from './cache-files.node.js';
import { describe, FORMAT, type GraphDescription, rewritten } from './cache-key.node.js';
import { ModelError } from './errors.js';
import { heldBytes } from './memory-check.js';
import { PACKED_SUFFIXES, PACKING_DIR, type PackedTarget, packedFor, verifyPacked, writePacked } from './packed-weights.node.js';

/** Unfinished builds of a process that is gone, or older than this, are removed. */
const STALE_TMP_MS = 24 * 3600_000;
/** Hard links of checkpoint files made by format 3; removed by `clean` (unlinking a name never changes the file). */
const OLD_BLOB = /^vlmkit-blob-[0-9a-f]+\.safetensors$/;

/** `$XDG_CACHE_HOME/vlmkit`, else `~/.cache/vlmkit`. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CACHE_HOME;
  // The spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  return xdg?.startsWith('/') ? join(xdg, 'vlmkit') : join(homedir(), '.cache', 'vlmkit');
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
  /** Bytes a session on it loads as weights: the .onnx, its .onnx.data and the checkpoint ranges it references. */
  bytes: number;
  /**
   * The graph as a session takes it: its external data named relative to `folder` (a folder above the cache
   * and the checkpoint files), to be passed as `externalDataFolder`. Verified: the bytes that were hashed.
   */
  model: Uint8Array;
  folder: string;
  /** The float type the graph computes in (after its passes). */
  computeDtype: ComputeDType;
  /** The graph has block-quantized weights (MatMulNBits). */
  quantized: boolean;
  /** Whether every input file still has the stamp the key was made from (false: changed since; look up again). */
  unchanged(): Promise<boolean>;
  /**
   * The entry's packed copy (./packed-weights.node.ts): its .onnx, verified; 'refused' when ORT's copy was found
   * unusable on this machine (its sessions pack in memory); undefined when it has none yet.
   */
  packed(): Promise<{ path: string } | 'refused' | undefined>;
  /** Has `write` make the entry's packed copy (a session created with runtime's `savePacked`) and records it. */
  writePacked<T>(write: (target: PackedTarget) => Promise<T>): Promise<T>;
}

const CHECKPOINT = 'checkpoint:';
const CACHE = 'cache:';

/** A cache of built graphs in one folder. */
export class GraphCache {
  private readonly log: (msg: string) => void;

  private constructor(
    readonly root: string,
    private readonly options: GraphCacheOptions,
  ) {
    this.log = options.logger ?? ((m) => process.stderr.write(`vlmkit: ${m}\n`));
  }

  /**
   * The cache in `root` (default `defaultCacheDir()`), its missing directories created one at a time. Refused
   * (BAD_CACHE_DIR, naming the path) unless it is a directory where a folder and a file can be made: a file, a FIFO,
   * /proc/self or a read-only mount are refused at once instead of being written into or waited on.
   */
  static async open(root: string | undefined, options: GraphCacheOptions = {}): Promise<GraphCache> {
    const dir = resolve(root ?? defaultCacheDir());
    const refuse = (why: string) =>
      new ModelError(
        'BAD_CACHE_DIR',
        `graph cache directory ${dir} cannot be used: ${why}. Pass --cache-dir DIR (cacheDir) with a writable directory.`,
      );
    await makeDirectory(dir, refuse);
    // A folder made and removed: refuses at once a tree where nothing can be created (/proc/self, read-only).
    const probe = join(dir, `vlmkit-.probe-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
    try {
      await mkdir(probe);
      await writeFile(join(probe, 'f'), 'vlmkit', { flag: 'wx' });
    } catch (e) {
      throw refuse(`a folder and a file cannot be created in it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    } finally {
      await rm(probe, { recursive: true, force: true }).catch(() => undefined);
    }
    return new GraphCache(await realpath(dir), options);
  }

  /**
   * The key of a graph built from `checkpointDir`: its nodes, inputs, outputs and initializer descriptions
   * (a checkpoint tensor by file and byte range) as built, the passes waiting on it, and the stamp of every
   * .safetensors file of the checkpoint (lazy tensors read those), of every other file an initializer reads,
   * and of `extraFiles`. No weight is read.
   */
  async key(
    g: Graph,
    checkpointDir: string,
    extraFiles: readonly string[] = [],
  ): Promise<{ key: string; inputs: Record<string, Stamp>; graph: GraphDescription }> {
    const inputs: Record<string, Stamp> = {};
    const stamped = async (path: string): Promise<string> => {
      const real = await realpath(path);
      inputs[real] ??= await stampOf(real);
      const s = inputs[real];
      return `${real}:${s.size}:${s.mtimeMs}:${s.ctimeMs}:${s.ino}:${s.dev}`;
    };
    const graph = rewritten.get(g) ?? (await describe(g));
    const h = createHash('sha256').update(graph.digest);
    for (const f of graph.files) h.update(`file:${await stamped(f)}`);
    for (const f of (await checkpointFiles(checkpointDir)).files) h.update(`shard:${basename(f)}:${await stamped(f)}`);
    for (const f of extraFiles) h.update(`extra:${basename(f)}:${await stamped(f)}`);
    return { key: h.digest('hex').slice(0, 24), inputs, graph };
  }

  /**
   * The graph in the cache: verified when found, built (and the entry written) when missing or damaged.
   * `beforeBuild` is told the bytes a session on the rewritten graph will hold (`heldBytes`) before anything is
   * quantized, folded or written; what it throws ends the load with nothing written.
   */
  async get(
    g: Graph,
    name: string,
    checkpointDir: string,
    extraFiles: readonly string[] = [],
    beforeBuild?: (bytes: number, modelPath: string) => void | Promise<void>,
  ): Promise<CacheHit> {
    const checkpoint = await realpath(checkpointDir);
    await this.clean();
    const { key, inputs, graph } = await this.key(g, checkpoint, extraFiles);
    const base = `vlmkit-${name}-${key}`;
    const entryPath = join(this.root, `${base}.json`);
    const entry = entryShape(await readJson<unknown>(entryPath));
    if (entry) {
      const found = await this.verify(entry, base);
      if (typeof found !== 'string') return this.hit(entry, base, found, true);
      this.log(`cached graph ${join(this.root, base)}.* is damaged (${found}); rebuilding it`);
      await this.remove(base);
    }
    runDeferredPasses(g);
    // Looked up again (a retry), the rewritten graph keeps the key it was built under.
    rewritten.set(g, graph);
    await beforeBuild?.(heldBytes(g), join(this.root, `${base}.onnx`));
    const built = await this.build(g, { name, key, checkpoint, inputs }, base);
    await this.prune(name, checkpoint);
    return this.hit(built.entry, base, built.model, false);
  }

  private hit(entry: Entry, base: string, onnx: Uint8Array, cached: boolean): CacheHit {
    const folder = entryFolder(this.root, entry.references);
    // Written for this folder at build; a cache folder moved since gets its locations rebased.
    const model = folder === entry.folder && this.root === entry.root ? onnx : this.rebase(onnx, entry, base, folder);
    return {
      modelPath: join(this.root, `${base}.onnx`),
      cached,
      bytes: entry.onnx.size + (entry.data?.size ?? 0) + entry.referenced,
      model,
      folder,
      computeDtype: entry.computeDtype,
      quantized: entry.quantized,
      unchanged: async () => {
        for (const [path, stamp] of Object.entries(entry.inputs)) {
          if (!sameStamp(stamp, await stampOf(path).catch(() => ({ ...stamp, size: -1 })))) return false;
        }
        return true;
      },
      packed: () => this.packed(base),
      writePacked: async (write) => {
        const { result, record } = await writePacked(this.root, base, write);
        if ('refused' in record)
          this.log(`no packed copy of cached graph ${join(this.root, base)} (${record.refused}); ORT packs it in memory`);
        await this.updateEntry(base, (e) => ({ ...e, packed: record }));
        return result;
      },
    };
  }

  /** The verified packed copy of `base`, if its entry has one; a damaged one is removed and logged. */
  private async packed(base: string): Promise<{ path: string } | 'refused' | undefined> {
    const record = entryShape(await readJson<unknown>(join(this.root, `${base}.json`)))?.packed;
    if (record === undefined) return undefined;
    // Refused by another ORT or CPU: this one may write a usable copy.
    if ('refused' in record) return record.for === packedFor() ? 'refused' : undefined;
    const full = this.options.verify === 'full';
    const found = await verifyPacked(this.root, base, record, full, (stamp) =>
      this.updateEntry(base, (e) =>
        e.packed && 'data' in e.packed ? { ...e, packed: { ...e.packed, data: { ...e.packed.data, stamp } } } : e,
      ),
    );
    if (typeof found === 'string') return { path: found };
    this.log(`packed copy of cached graph ${join(this.root, base)} is damaged (${found.damaged}); writing it again`);
    await this.updateEntry(base, ({ packed: _, ...e }) => e);
    for (const suffix of PACKED_SUFFIXES) await removeFile(join(this.root, `${base}${suffix}`));
    return undefined;
  }

  /** Rewrites the entry of `base` as it is on disk now (another process may have rewritten it meanwhile). */
  private async updateEntry(base: string, change: (e: Entry) => Entry): Promise<void> {
    const path = join(this.root, `${base}.json`);
    const e = entryShape(await readJson<unknown>(path));
    if (e !== undefined && e.format === FORMAT) await writeAtomic(path, JSON.stringify(change(e), null, 1));
  }

  /** `onnx` (locations relative to `entry.folder`) with its locations relative to `folder`. */
  private rebase(onnx: Uint8Array, entry: Entry, base: string, folder: string): Uint8Array {
    const files = new Set(Object.values(entry.references));
    const data = `${base}.onnx.data`;
    return relocateExternalData(onnx, (location) => {
      const was = resolve(entry.folder, location);
      if (files.has(was)) return relative(folder, was);
      return basename(was) === data ? relative(folder, join(this.root, data)) : undefined;
    });
  }

  /** The .onnx's bytes when the entry's files are what was written; else what is wrong. */
  private async verify(entry: Entry, base: string): Promise<Uint8Array | string> {
    if (entry.format !== FORMAT) return `entry format ${entry.format}, expected ${FORMAT}`;
    // The key holds these stamps; checked again so that an entry is never served for files it was not built from.
    for (const [path, stamp] of Object.entries(entry.inputs)) {
      if (!sameStamp(stamp, await stampOf(path).catch(() => ({ ...stamp, size: -1 })))) return `${path} changed since it was built`;
    }
    const onnx = join(this.root, `${base}.onnx`);
    const found = await cacheFileStamp(onnx);
    if (typeof found === 'string') return found;
    if (found.size !== entry.onnx.size) return `${basename(onnx)} has ${found.size} bytes, ${entry.onnx.size} were written`;
    const bytes = await readRegular(onnx);
    if (createHash('sha256').update(bytes).digest('hex') !== entry.onnx.sha256)
      return `${basename(onnx)} does not have the sha256 it was written with`;
    if (entry.data) {
      const dataPath = `${onnx}.data`;
      const stamp = await cacheFileStamp(dataPath);
      if (typeof stamp === 'string') return stamp;
      // Unchanged since it was written or last verified: its bytes are the ones hashed then.
      if (this.options.verify === 'full' || !sameStamp(entry.data.stamp, stamp)) {
        if (stamp.size !== entry.data.size) return `${basename(dataPath)} has ${stamp.size} bytes, ${entry.data.size} were written`;
        if ((await sha256File(dataPath)) !== entry.data.sha256) return `${basename(dataPath)} does not have the sha256 it was written with`;
        await writeAtomic(join(this.root, `${base}.json`), JSON.stringify({ ...entry, data: { ...entry.data, stamp } }));
      }
    }
    return bytes;
  }

  /**
   * Written under temporary names and renamed into place, data first and the entry last: a concurrent
   * process building the same key writes identical bytes, and a reader never sees a partial file. A build
   * during which an input file changed writes no entry (its lazy tensors may mix two versions).
   */
  private async build(
    g: Graph,
    e: Pick<Entry, 'name' | 'key' | 'checkpoint' | 'inputs'>,
    base: string,
  ): Promise<{ entry: Entry; model: Uint8Array }> {
    const tag = `tmp-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    const modelPath = join(this.root, `${base}.onnx`);
    const dataFile = `${base}.onnx.data`;
    const tmpModel = join(this.root, `${base}.${tag}.onnx`);
    const tmpData = join(this.root, `${dataFile}.${tag}`);
    // Every checkpoint file a tensor is used from as stored is referenced by a logical name, in place.
    const references = new Map<string, string>();
    for (const real of Object.keys(e.inputs)) {
      const rel = relative(e.checkpoint, real);
      const inside = !rel.startsWith('..') && !isAbsolute(rel);
      references.set(real, `${CHECKPOINT}${inside ? rel.split(sep).join('/') : real}`);
    }
    try {
      const saved = await saveModel(g, tmpModel, {
        dataFile: `${CACHE}${dataFile}`,
        writeDataTo: tmpData,
        references,
        fold: true,
        hashData: true,
      });
      const logical = await readRegular(tmpModel);
      const located = externalLocations(logical);
      const used = Object.fromEntries([...references].filter(([, l]) => located.has(l)).map(([real, l]) => [l, real]));
      const folder = entryFolder(this.root, used);
      const model = relocateExternalData(logical, (location) => {
        if (location.startsWith(CACHE)) return relative(folder, join(this.root, location.slice(CACHE.length)));
        const file = used[location];
        return file === undefined ? undefined : relative(folder, file);
      });
      await writeFile(tmpModel, model);
      const onnx: FileRecord = { size: model.byteLength, sha256: createHash('sha256').update(model).digest('hex') };
      for (const [path, stamp] of Object.entries(e.inputs)) {
        if (!sameStamp(stamp, await stampOf(path))) {
          throw new ModelError('BAD_INPUT', `${path} changed while the graph ${base} was built from it; load again once it is complete.`);
        }
      }
      let data: Entry['data'];
      if (saved.dataPath !== undefined) {
        const record = { size: (await stat(tmpData)).size, sha256: saved.dataSha256! };
        await renameOver(tmpData, join(this.root, dataFile));
        data = { ...record, stamp: await stampOf(join(this.root, dataFile)) };
      }
      await renameOver(tmpModel, modelPath);
      const entry: Entry = {
        format: FORMAT,
        ...e,
        references: used,
        folder,
        root: this.root,
        onnx,
        ...(data ? { data } : {}),
        computeDtype: g.computeDtype,
        quantized: [...everyNode(g.snapshot().nodes)].some((n) => n.opType === 'MatMulNBits'),
        // What the written graph still reads from the checkpoint: a Cast folded at save is in `data` instead.
        referenced: saved.referencedBytes + (g.computeDtype === 'float32' ? saved.referenced16BitBytes : 0),
        createdAt: Date.now(),
      };
      await writeAtomic(join(this.root, `${base}.json`), JSON.stringify(entry, null, 1));
      return { entry, model };
    } finally {
      await rm(tmpModel, { force: true });
      await rm(tmpData, { force: true });
    }
  }

  private async remove(base: string): Promise<void> {
    // The entry first: without it the rest is an unfinished build, never served.
    for (const suffix of ['.json', '.onnx', '.onnx.data', ...PACKED_SUFFIXES]) {
      const path = join(this.root, `${base}${suffix}`);
      if (!(await removeFile(path))) {
        throw new ModelError(
          'BAD_CACHE_DIR',
          `graph cache file ${path} cannot be removed (${await lstat(path).then(describeFileKind, () => 'gone')}); remove it, or pass another --cache-dir DIR (cacheDir).`,
        );
      }
    }
  }

  /**
   * Removes what a killed build left (temporary files of a process that is gone, or a day old), graphs whose
   * entry is missing (a build that died between renames) once they are a day old, and the hard links of
   * checkpoint files that format 3 made (unlinking a name leaves the checkpoint as it is). Files another live
   * process is writing carry its pid and are kept; an entry's files are only removed by `get` and `prune`.
   */
  async clean(): Promise<string[]> {
    const removed: string[] = [];
    const links: string[] = [];
    const now = Date.now();
    const age = async (path: string) => now - (await lstat(path).catch(() => ({ mtimeMs: now }))).mtimeMs;
    const unfinished = async (path: string, n: string) => {
      const tmp = /\.(?:tmp|probe)-(\d+)-[a-z0-9]+/.exec(n);
      return tmp !== null && (!alive(Number(tmp[1])) || (await age(path)) > STALE_TMP_MS);
    };
    const names = await readdir(this.root);
    const entries = new Set(names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -'.json'.length)));
    for (const n of names) {
      // A packing process's private folder: removed once the process is gone (or a day old).
      const packing = PACKING_DIR.exec(n);
      if (packing !== null && (!alive(Number(packing[1])) || (await age(join(this.root, n))) > STALE_TMP_MS)) {
        await rm(join(this.root, n), { recursive: true, force: true });
        removed.push(n);
        continue;
      }
      if (!n.startsWith('vlmkit-')) continue;
      const path = join(this.root, n);
      if (OLD_BLOB.test(n)) {
        if (await removeFile(path)) links.push(n);
        continue;
      }
      let stale = await unfinished(path, n);
      if (!stale && !n.includes('.tmp-')) {
        const base = n.replace(/(?:\.packed\.(?:onnx|data)|\.onnx(?:\.data)?)$/, '');
        stale = base !== n && !entries.has(base) && (await age(path)) > STALE_TMP_MS;
      }
      if (stale && (await removeFile(path))) removed.push(n);
    }
    // Remembered digests of checkpoint files (format 4 keyed on content): unused now.
    const digests = join(this.root, 'digests');
    for (const n of await readdir(digests).catch(() => [])) {
      if (/^[0-9a-f]{32}\.json$|\.(?:tmp|probe)-\d+-/.test(n) && (await removeFile(join(digests, n)))) removed.push(`digests/${n}`);
    }
    await rmdir(digests).catch(() => undefined);
    if (removed.length > 0) this.log(`removed ${removed.length} unfinished graph cache file(s) from ${this.root}: ${removed.join(', ')}`);
    if (links.length > 0) {
      this.log(
        `removed ${links.length} hard link(s) of checkpoint files made by an older vlmkit from ${this.root} (the checkpoints are unchanged)`,
      );
    }
    return [...removed, ...links];
  }

  /**
   * Keeps the newest `keep` entries per model name and checkpoint directory, and removes entries of that
   * name whose input files are gone or changed (their key, made from the files' stamps, can no longer match).
   */
  private async prune(name: string, checkpoint: string): Promise<void> {
    const keep = this.options.keep ?? 3;
    const prefix = `vlmkit-${name}-`;
    const mine: { base: string; createdAt: number }[] = [];
    for (const n of await readdir(this.root)) {
      if (!n.startsWith(prefix) || !n.endsWith('.json') || n.includes('.tmp-')) continue;
      const base = n.slice(0, -'.json'.length);
      const e = entryShape(await readJson<unknown>(join(this.root, n)));
      let gone = e === undefined || e.format !== FORMAT;
      if (e && !gone) {
        for (const [path, stamp] of Object.entries(e.inputs)) {
          if (!sameStamp(stamp, await stampOf(path).catch(() => ({ ...stamp, size: -1 })))) gone = true;
        }
      }
      if (gone) {
        await this.remove(base);
        this.log(`removed superseded cached graph ${base}`);
      } else if (e!.checkpoint === checkpoint) mine.push({ base, createdAt: e!.createdAt });
    }
    mine.sort((a, b) => b.createdAt - a.createdAt);
    for (const { base } of mine.slice(keep)) {
      await this.remove(base);
      this.log(`removed superseded cached graph ${base}`);
    }
  }
}
