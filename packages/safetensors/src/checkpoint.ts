/**
 * A model checkpoint: a directory in the Hugging Face hub layout, an index
 * file, or a single .safetensors file. All headers are read and
 * cross-checked at open; tensor data is read lazily, one tensor at a time.
 *
 * Which files of a directory are its weights is transformers' rule
 * (`checkpointFiles`): what config.json's `transformers_weights` names, else
 * `model.safetensors`, else the shards `model.safetensors.index.json` names;
 * no other file is read. Every shard
 * must stay inside the model directory, also after following symlinks, and no
 * tensor may appear in two shards. Tensors a shard holds beyond those the
 * weight_map lists are kept, as transformers loads whole shard files.
 */
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { Tensor, TensorInfo } from './dtype.js';
import { fail, SafetensorsError, show } from './errors.js';
import { SafetensorsFile } from './file.js';
import { toFloat32 } from './half.js';
import { type JsonDefect, MAX_JSON_DEPTH, scanJson, showPath } from './json-guard.js';
import { tensorEntry } from './nearest.js';
import { describeFileKind, readRegularTextFile } from './regular-file.js';

/** transformers' SAFE_WEIGHTS_NAME and SAFE_WEIGHTS_INDEX_NAME: the only weight files of a directory it reads. */
const WEIGHTS = 'model.safetensors';
const WEIGHTS_INDEX = 'model.safetensors.index.json';
const FLOAT_DTYPES = new Set(['F64', 'F32', 'F16', 'BF16']);
/** An index is read whole; one for a 1T-parameter model is a few MB. */
const MAX_INDEX_SIZE = 100_000_000;

/** One tensor read from a checkpoint (`Checkpoint.observeReads`). */
export interface TensorRead {
  readonly name: string;
  /** The .safetensors file it came from (absolute). */
  readonly file: string;
  readonly bytes: number;
}

export class Checkpoint {
  /** The directory, index file or .safetensors file this was opened from (absolute). */
  readonly path: string;
  readonly #files: SafetensorsFile[];
  readonly #owner: Map<string, SafetensorsFile>;
  #onRead: ((read: TensorRead) => void) | undefined;

  private constructor(path: string, files: SafetensorsFile[], owner: Map<string, SafetensorsFile>) {
    this.path = path;
    this.#files = files;
    this.#owner = owner;
  }

  static async open(pathOrDir: string): Promise<Checkpoint> {
    const found = await locate(pathOrDir);
    const checkpoint = await Checkpoint.#openFiles(found.path, found.files);
    if (found.index !== undefined) await checkpoint.#checkWeightMap(found.index, found.weightMap);
    return checkpoint;
  }

  /** Every `weight_map` entry must be in the shard it names; closes the checkpoint before refusing. */
  async #checkWeightMap(indexFile: string, weightMap: Record<string, string>): Promise<void> {
    const dir = dirname(indexFile);
    for (const [tensor, shard] of Object.entries(weightMap)) {
      const holder = this.#owner.get(tensor)?.path;
      if (holder !== resolve(dir, shard)) {
        await this.close();
        fail(
          'INDEX_MISMATCH',
          `expected the tensor in shard '${shard}' as the index says, found it ${holder === undefined ? 'in no shard' : `in '${basename(holder)}'`}.`,
          { file: indexFile, tensor },
        );
      }
    }
  }

  static async #openFiles(path: string, files: string[]): Promise<Checkpoint> {
    const opened: SafetensorsFile[] = [];
    try {
      const owner = new Map<string, SafetensorsFile>();
      for (const f of files) {
        const file = await SafetensorsFile.open(f);
        opened.push(file);
        for (const name of file.names()) {
          const first = owner.get(name);
          if (first !== undefined) {
            fail(
              'DUPLICATE_TENSOR',
              `the tensor is in both '${first.path}' and '${file.path}'; expected each tensor in exactly one file.`,
              { file: path, tensor: name },
            );
          }
          owner.set(name, file);
        }
      }
      return new Checkpoint(path, opened, owner);
    } catch (err) {
      await Promise.all(opened.map((f) => f.close().catch(() => undefined)));
      throw err;
    }
  }

  /** The .safetensors files this checkpoint reads (absolute, in shard order): `checkpointFiles`' list. */
  files(): string[] {
    return this.#files.map((f) => f.path);
  }

  /** Tensor names, in shard order then header order. */
  names(): string[] {
    return [...this.#owner.keys()];
  }

  has(name: string): boolean {
    return this.#owner.has(name);
  }

  info(name: string): TensorInfo {
    return this.#fileOf(name).info(name);
  }

  async read(name: string): Promise<Tensor> {
    const file = this.#fileOf(name);
    const tensor = await file.read(name);
    this.#onRead?.({ name, file: file.path, bytes: tensor.data.byteLength });
    return tensor;
  }

  /**
   * Calls `listener` after each tensor read (`read`, `readFloat32`) with the tensor's name, file and bytes:
   * what a load's progress within a step is counted from. One listener at a time; undefined removes it.
   */
  observeReads(listener: ((read: TensorRead) => void) | undefined): void {
    this.#onRead = listener;
  }

  /** Any float dtype as f32: F16/BF16 exactly, F64 rounded to nearest; integers are an error. */
  async readFloat32(name: string): Promise<Float32Array> {
    const info = this.info(name);
    if (!FLOAT_DTYPES.has(info.dtype)) {
      fail(
        'UNSUPPORTED_CONVERSION',
        `expected a float tensor (F64, F32, F16, BF16) to read as float32, found ${info.dtype}; use read() for integer tensors.`,
        { file: info.file, tensor: name },
      );
    }
    return toFloat32(await this.read(name));
  }

  async close(): Promise<void> {
    await Promise.all(this.#files.map((f) => f.close()));
  }

  #fileOf(name: string): SafetensorsFile {
    return tensorEntry(this.#owner, name, { file: this.path, kind: 'checkpoint' });
  }
}

/** The weight files of a checkpoint: what `Checkpoint.open` reads. */
export interface CheckpointFiles {
  /** The index naming the shards; undefined for one unsharded file. */
  readonly index: string | undefined;
  /** The .safetensors files, absolute, sorted by name; each once. */
  readonly files: readonly string[];
  /**
   * The directory's other `*.safetensors` and `*.safetensors.index.json` files (absolute, sorted), which a
   * load does not read: a reference dump, an adapter, a variant. Empty for a file opened directly.
   */
  readonly unread: readonly string[];
}

/**
 * The files a load of `pathOrDir` reads. A directory follows transformers' `from_pretrained` for a local
 * folder (modeling_utils `_get_resolved_checkpoint_files`): the file or index config.json's
 * `transformers_weights` names if it has one, else `model.safetensors` if it is a file, else the shards
 * `model.safetensors.index.json` names; any other .safetensors or index file there (a reference dump, an
 * adapter, a variant) is not a weight file, and a folder holding only such files is refused by name
 * (NO_MODEL_SAFETENSORS) rather than guessed at. An index .json or a .safetensors file given directly is
 * read as given. Every caller that needs "the checkpoint's files" (the graph cache's key, an export's manifest,
 * `vlmkit inspect`) asks here.
 */
export async function checkpointFiles(pathOrDir: string): Promise<CheckpointFiles> {
  const { index, files, unread } = await locate(pathOrDir);
  return { index, files, unread };
}

interface Located extends CheckpointFiles {
  /** What was opened (absolute). */
  readonly path: string;
  readonly files: string[];
  /** The index's weight_map ({} without an index). */
  readonly weightMap: Record<string, string>;
}

async function locate(pathOrDir: string): Promise<Located> {
  const path = resolve(pathOrDir);
  const st = await stat(path).catch((cause: NodeJS.ErrnoException) =>
    cause.code === 'ENOENT'
      ? fail('FILE_NOT_FOUND', 'expected a model directory, index .json or .safetensors file here, found nothing.', { file: path, cause })
      : fail('IO_ERROR', `cannot stat: ${cause.message}.`, { file: path, cause }),
  );
  if (!st.isDirectory()) {
    if (path.endsWith('.json')) return { path, ...(await readIndex(path)), unread: [] };
    return { path, index: undefined, files: [path], weightMap: {}, unread: [] };
  }
  const present = (await readdir(path)).filter((f) => f.endsWith('.safetensors') || f.endsWith('.safetensors.index.json')).sort();
  const unread = (read: readonly string[]) => present.map((f) => join(path, f)).filter((f) => !read.includes(f));
  const named = await namedWeights(path);
  if (named?.endsWith('.json')) {
    const found = await readIndex(named);
    return { path, ...found, unread: unread([found.index, ...found.files]) };
  }
  if (named !== undefined) return { path, index: undefined, files: [named], weightMap: {}, unread: unread([named]) };
  // os.path.isfile, as transformers checks: a directory or a dangling link of that name is not the weights.
  const isFile = (name: string) =>
    stat(join(path, name)).then(
      (s) => s.isFile(),
      () => false,
    );
  if (await isFile(WEIGHTS)) {
    const files = [join(path, WEIGHTS)];
    return { path, index: undefined, files, weightMap: {}, unread: unread(files) };
  }
  if (await isFile(WEIGHTS_INDEX)) {
    const found = await readIndex(join(path, WEIGHTS_INDEX));
    return { path, ...found, unread: unread([found.index, ...found.files]) };
  }
  // Neither is a file: a model.safetensors that is something else (a FIFO, a device, a link to nothing) is named as such.
  const weights = join(path, WEIGHTS);
  if ((await lstat(weights).catch(() => undefined)) !== undefined) {
    const target = await stat(weights).catch(() => undefined);
    fail(
      'NOT_A_FILE',
      `expected a regular file, found ${target ? describeFileKind(target) : 'a symbolic link to nothing'}; only regular files are read.`,
      {
        file: weights,
      },
    );
  }
  if (present.length === 0) {
    fail('NO_SAFETENSORS', `expected ${WEIGHTS} or ${WEIGHTS_INDEX} in this directory, found no safetensors file at all.`, { file: path });
  }
  return fail(
    'NO_MODEL_SAFETENSORS',
    `expected ${WEIGHTS} or ${WEIGHTS_INDEX} in this directory (the weight files transformers' from_pretrained reads), found only ${present.map((f) => `'${f}'`).join(', ')}, which are not read as weights; rename the weights file to ${WEIGHTS} (or its index to ${WEIGHTS_INDEX}).`,
    { file: path },
  );
}

/**
 * config.json's `transformers_weights`: the weight file or index a repository names for transformers to read
 * instead of model.safetensors (`transformers_explicit_filename`), absolute. Undefined without one, and when
 * config.json is missing or unreadable (the model's config reader reports that).
 */
async function namedWeights(dir: string): Promise<string | undefined> {
  const file = join(dir, 'config.json');
  let config: unknown;
  try {
    config = JSON.parse(await readRegularTextFile(file));
  } catch {
    return undefined;
  }
  const name = (config as { transformers_weights?: unknown } | null)?.transformers_weights;
  if (name === undefined || name === null) return undefined;
  if (typeof name !== 'string' || !(name.endsWith('.safetensors') || name.endsWith('.safetensors.index.json'))) {
    fail(
      'BAD_TRANSFORMERS_WEIGHTS',
      `expected "transformers_weights" to name a .safetensors or .safetensors.index.json file, found ${show(name)}.`,
      { file },
    );
  }
  const path = resolve(dir, name);
  if (!isInside(dir, path)) {
    fail('BAD_TRANSFORMERS_WEIGHTS', `expected "transformers_weights" to name a file inside the model directory, found '${name}'.`, {
      file,
    });
  }
  return path;
}

/** An index and the shards it names (absolute, each once: 'a.safetensors' and './a.safetensors' are one file). */
async function readIndex(indexFile: string): Promise<{ index: string; files: string[]; weightMap: Record<string, string> }> {
  const dir = dirname(indexFile);
  const weightMap = await readWeightMap(indexFile);
  const shardNames = [...new Set(Object.values(weightMap))].sort();
  const shardPaths = await Promise.all(shardNames.map((s) => resolveShard(indexFile, dir, s)));
  return { index: indexFile, files: [...new Set(shardPaths)], weightMap };
}

async function readWeightMap(indexFile: string): Promise<Record<string, string>> {
  let json: unknown;
  let defect: JsonDefect | null = null;
  try {
    const size = (await stat(indexFile)).size;
    if (size > MAX_INDEX_SIZE) {
      fail('INDEX_TOO_LARGE', `expected an index of at most ${MAX_INDEX_SIZE} bytes (a real one is a few MB), found ${size} bytes.`, {
        file: indexFile,
      });
    }
    const text = await readRegularTextFile(indexFile, MAX_INDEX_SIZE);
    defect = scanJson(text);
    if (defect?.kind === 'too-deep') {
      fail(
        'JSON_TOO_DEEP',
        `expected the index JSON nested at most ${MAX_JSON_DEPTH} deep, found deeper nesting at character ${defect.offset}.`,
        {
          file: indexFile,
        },
      );
    }
    json = JSON.parse(text);
  } catch (cause) {
    if (cause instanceof SafetensorsError) throw cause;
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') fail('FILE_NOT_FOUND', 'expected a safetensors index .json here, found nothing.', { file: indexFile, cause });
    return fail(
      'INDEX_NOT_JSON',
      `expected the index to be JSON with a "weight_map", found unparsable text (${(cause as Error).message}).`,
      { file: indexFile, cause },
    );
  }
  if (defect?.kind === 'duplicate-key') {
    fail('DUPLICATE_KEY', `expected each key once in ${showPath(defect.path)} of the index, found ${show(defect.key)} twice.`, {
      file: indexFile,
    });
  }
  const weightMap = (json as { weight_map?: unknown } | null)?.weight_map;
  if (typeof weightMap !== 'object' || weightMap === null || Array.isArray(weightMap)) {
    return fail('INDEX_BAD_WEIGHT_MAP', `expected "weight_map" to be an object of tensor name -> shard file, found ${show(weightMap)}.`, {
      file: indexFile,
    });
  }
  for (const [tensor, shard] of Object.entries(weightMap)) {
    if (typeof shard !== 'string' || shard === '' || shard.includes('\0')) {
      fail('INDEX_BAD_WEIGHT_MAP', `expected "weight_map" to map tensor '${tensor}' to a shard file name, found ${show(shard)}.`, {
        file: indexFile,
        tensor,
      });
    }
  }
  return weightMap as Record<string, string>;
}

/**
 * The absolute shard path, refused if it leaves the model directory (by `..`, absolute path, or symlink).
 * In huggingface_hub's cache (`models--org--name/snapshots/<rev>/` holding symlinks into `../../blobs/`) a
 * symlink may lead anywhere inside that model's cache folder `models--org--name/`, and nowhere else.
 */
async function resolveShard(indexFile: string, dir: string, shard: string): Promise<string> {
  const outside = (how: string): never =>
    fail('SHARD_OUTSIDE_DIR', `the index names shard '${shard}', which ${how}; expected a file inside the model directory ${dir}.`, {
      file: indexFile,
    });
  if (isAbsolute(shard)) outside('is an absolute path');
  const path = resolve(dir, shard);
  if (!isInside(dir, path)) outside('points outside it');
  let real: string;
  try {
    real = await realpath(path);
  } catch (cause) {
    return fail('SHARD_MISSING', `the index names shard '${shard}', expected it at ${path}, found nothing.`, { file: indexFile, cause });
  }
  const realDir = await realpath(dir);
  if (isInside(realDir, real)) return path;
  const hub = hubCacheRoot(realDir);
  if (hub === undefined) outside(`is a symlink to ${real}, outside it`);
  else if (!isInside(hub, real)) outside(`is a symlink to ${real}, outside the hub cache folder ${hub} of this snapshot`);
  return path;
}

/**
 * `.../models--org--name` when `dir` is (inside) a huggingface_hub snapshot `.../models--org--name/snapshots/<rev>`,
 * else undefined. `dir` is a real path: the layout is judged after symlinks are followed.
 */
function hubCacheRoot(dir: string): string | undefined {
  for (let d = dir; dirname(d) !== d; d = dirname(d)) {
    const snapshots = dirname(d);
    if (basename(snapshots) === 'snapshots' && basename(dirname(snapshots)).startsWith('models--')) return dirname(snapshots);
  }
  return undefined;
}

function isInside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && !isAbsolute(rel) && rel !== '..' && !rel.startsWith(`..${sep}`);
}
