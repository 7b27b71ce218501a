/**
 * One .safetensors file: the header is read and validated at open; tensor data is read lazily, one tensor at
 * a time, through a ByteSource (a file handle in Node, a Blob, an HTTP URL) into one fresh buffer of exactly
 * the tensor's byte length. A fresh buffer is always aligned, so tensors at odd offsets need no special case.
 */
import { fileSource } from '#platform';
import { DTYPE_SIZE, HOST_IS_LITTLE_ENDIAN, swapBytesInPlace, type Tensor, type TensorInfo, viewAs } from './dtype.js';
import { fail, SafetensorsError } from './errors.js';
import { checkHeaderLength, parseHeader } from './header.js';
import { tensorEntry } from './nearest.js';
import type { ByteSource } from './source.js';

export class SafetensorsFile {
  /** Where the bytes come from: the absolute path in Node, else the source's name (a URL, a picked file). */
  readonly path: string;
  /** The version of the bytes (`ByteSource.stamp`): what a cache key is built from. */
  readonly stamp: string;
  readonly metadata: Record<string, string>;
  readonly #infos: Map<string, TensorInfo>;
  #source: ByteSource | null;

  private constructor(source: ByteSource, metadata: Record<string, string>, infos: Map<string, TensorInfo>) {
    this.path = source.name;
    this.stamp = source.stamp;
    this.#source = source;
    this.metadata = metadata;
    this.#infos = infos;
  }

  /** The file at `path` (Node only: a file handle). In the browser, `fromSource(blobSource(file))` or `urlSource(url)`. */
  static async open(path: string): Promise<SafetensorsFile> {
    return SafetensorsFile.fromSource(await fileSource(path));
  }

  /** Reads and checks the header from `source`, which the file then owns: closed by `close()`, or here if the header is refused. */
  static async fromSource(source: ByteSource): Promise<SafetensorsFile> {
    const file = source.name;
    try {
      const size = source.size;
      const prefix = await source.read(0, Math.min(8, size));
      const headerLength = checkHeaderLength(file, prefix, size);
      const headerBytes = await source.read(8, headerLength);
      const dataStart = 8 + headerLength;
      const { metadata, entries } = parseHeader(file, headerBytes, size - dataStart);
      const infos = new Map<string, TensorInfo>();
      const where = source.path === undefined ? { file, source } : { file };
      for (const [name, e] of entries) {
        infos.set(name, { name, dtype: e.dtype, shape: e.shape, ...where, byteOffset: dataStart + e.begin, byteLength: e.end - e.begin });
      }
      return new SafetensorsFile(source, metadata, infos);
    } catch (err) {
      await source.close().catch(() => undefined);
      throw err;
    }
  }

  /** Tensor names in header order. */
  names(): string[] {
    return [...this.#infos.keys()];
  }

  has(name: string): boolean {
    return this.#infos.has(name);
  }

  info(name: string): TensorInfo {
    const info = tensorEntry(this.#infos, name, { file: this.path, kind: 'file' });
    return { ...info, shape: [...info.shape] };
  }

  async read(name: string): Promise<Tensor> {
    const info = this.info(name);
    const source = this.#source;
    if (source === null)
      fail('FILE_CLOSED', 'expected an open file, found it closed; open it again to read.', { file: this.path, tensor: name });
    let bytes: Uint8Array;
    try {
      bytes = await source.read(info.byteOffset, info.byteLength);
    } catch (cause) {
      throw tensorError(cause, info);
    }
    // A source's buffer is fresh and whole; a window of a bigger one is copied so `data.buffer` is the tensor's alone.
    if (bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) bytes = bytes.slice();
    if (!HOST_IS_LITTLE_ENDIAN) swapBytesInPlace(bytes, DTYPE_SIZE[info.dtype]);
    return { dtype: info.dtype, shape: info.shape, data: viewAs(info.dtype, bytes) };
  }

  async close(): Promise<void> {
    const source = this.#source;
    this.#source = null;
    await source?.close();
  }
}

/** A source's refusal with the tensor named; a failed allocation of the tensor's buffer as TENSOR_TOO_LARGE. */
function tensorError(cause: unknown, info: TensorInfo): unknown {
  const where = { file: info.file, tensor: info.name, cause };
  if (cause instanceof RangeError) {
    return new SafetensorsError(
      'TENSOR_TOO_LARGE',
      `${info.file}: tensor '${info.name}': expected to allocate ${info.byteLength} bytes for this tensor in one buffer, found the runtime refuses (${cause.message}).`,
      where,
    );
  }
  if (!(cause instanceof SafetensorsError) || cause.tensor !== undefined) return cause;
  const prefix = `${info.file}: `;
  const what = cause.message.startsWith(prefix) ? cause.message.slice(prefix.length) : cause.message;
  return new SafetensorsError(cause.code, `${prefix}tensor '${info.name}': ${what}`, where);
}
