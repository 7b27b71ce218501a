/**
 * A model checkpoint: a directory in the Hugging Face hub layout (a local folder, a picked folder, a URL), an
 * index file, or a single .safetensors file. All headers are read and cross-checked at open; tensor data is
 * read lazily, one tensor at a time.
 *
 * Which files of a directory are its weights is transformers' rule (weight-files.ts, shared by every kind
 * of directory). No tensor may appear in two shards, and every weight_map entry must be in the shard it
 * names. Tensors a shard holds beyond those the weight_map lists are kept, as transformers loads whole
 * shard files. In Node every file must stay inside the model directory, also after following symlinks
 * (`dirFiles`).
 */
import { locatePath } from '#platform';
import type { Tensor, TensorInfo } from './dtype.js';
import { fail } from './errors.js';
import { SafetensorsFile } from './file.js';
import { toFloat32 } from './half.js';
import { baseName } from './names.js';
import { tensorEntry } from './nearest.js';
import type { ModelFiles } from './source.js';
import { locateWeights, type WeightFiles } from './weight-files.js';

const FLOAT_DTYPES = new Set(['F64', 'F32', 'F16', 'BF16']);

/** One tensor read from a checkpoint (`Checkpoint.observeReads`). */
export interface TensorRead {
  readonly name: string;
  /** The .safetensors file it came from (absolute path in Node, else the source's name). */
  readonly file: string;
  readonly bytes: number;
}

export class Checkpoint {
  /** What this was opened from: the directory, index file or .safetensors file (absolute), or `ModelFiles.root`. */
  readonly path: string;
  readonly #files: SafetensorsFile[];
  readonly #owner: Map<string, SafetensorsFile>;
  #onRead: ((read: TensorRead) => void) | undefined;

  private constructor(path: string, files: SafetensorsFile[], owner: Map<string, SafetensorsFile>) {
    this.path = path;
    this.#files = files;
    this.#owner = owner;
  }

  /** A model directory, an index .json, or one .safetensors file (Node only; in the browser, `fromFiles`). */
  static async open(pathOrDir: string): Promise<Checkpoint> {
    const at = await locatePath(pathOrDir);
    if (at.source !== undefined)
      return Checkpoint.#open(at.path, { index: undefined, weightMap: {}, names: [at.path], sources: [at.source] });
    return Checkpoint.#open(at.path, await locateWeights(at.files, at.index));
  }

  /**
   * The checkpoint of a model directory read through `files`: `urlFiles(url)`, `blobFiles(input.files)`, Node's
   * `dirFiles(dir)`. The same rule and checks as `open`.
   */
  static async fromFiles(files: ModelFiles): Promise<Checkpoint> {
    return Checkpoint.#open(files.root, await locateWeights(files));
  }

  static async #open(path: string, weights: WeightFiles): Promise<Checkpoint> {
    const opened: SafetensorsFile[] = [];
    const pending = [...weights.sources];
    try {
      const owner = new Map<string, SafetensorsFile>();
      while (pending.length > 0) {
        const file = await SafetensorsFile.fromSource(pending.shift()!);
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
      if (weights.index !== undefined) checkWeightMap(weights, owner);
      return new Checkpoint(path, opened, owner);
    } catch (err) {
      await Promise.all([...opened, ...pending].map((f) => f.close().catch(() => undefined)));
      throw err;
    }
  }

  /** The .safetensors files this checkpoint reads (absolute, in shard order): `checkpointFiles`' list. */
  files(): string[] {
    return this.#files.map((f) => f.path);
  }

  /** Each file's version (`ByteSource.stamp`: device, inode, size, mtime for a local file), in `files()` order. */
  stamps(): string[] {
    return this.#files.map((f) => f.stamp);
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

/** Every `weight_map` entry must be in the shard it names. */
function checkWeightMap(weights: WeightFiles, owner: Map<string, SafetensorsFile>): void {
  const pathOf = new Map(weights.names.map((n, i) => [n, weights.sources[i]!.name]));
  for (const [tensor, shard] of Object.entries(weights.weightMap)) {
    const holder = owner.get(tensor)?.path;
    if (holder !== pathOf.get(shard)) {
      fail(
        'INDEX_MISMATCH',
        `expected the tensor in shard '${shard}' as the index says, found it ${holder === undefined ? 'in no shard' : `in '${baseName(holder)}'`}.`,
        { file: weights.index, tensor },
      );
    }
  }
}
