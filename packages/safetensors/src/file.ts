/**
 * One .safetensors file: the header is read and validated at open; tensor
 * data is read lazily, one tensor at a time, with positional reads from a
 * file handle into a buffer of exactly the tensor's byte length. A fresh
 * buffer is always aligned, so tensors at odd offsets need no special case.
 */
import type { FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { DTYPE_SIZE, HOST_IS_LITTLE_ENDIAN, swapBytesInPlace, type Tensor, type TensorInfo, viewAs } from './dtype.js';
import { fail } from './errors.js';
import { checkHeaderLength, parseHeader } from './header.js';
import { tensorEntry } from './nearest.js';
import { openRegularFile } from './regular-file.js';

/** fs reads are capped at 2 GiB - 1 per call; bigger tensors are read in chunks. */
const MAX_READ = 1 << 30;

export class SafetensorsFile {
  readonly path: string;
  readonly metadata: Record<string, string>;
  readonly #infos: Map<string, TensorInfo>;
  #handle: FileHandle | null;

  private constructor(path: string, handle: FileHandle, metadata: Record<string, string>, infos: Map<string, TensorInfo>) {
    this.path = path;
    this.#handle = handle;
    this.metadata = metadata;
    this.#infos = infos;
  }

  static async open(path: string): Promise<SafetensorsFile> {
    const file = resolve(path);
    const handle = await openRegularFile(file);
    try {
      const stat = await handle.stat();
      const size = stat.size;
      const prefix = await readExactly(handle, file, 0, Math.min(8, size));
      const headerLength = checkHeaderLength(file, prefix, size);
      const headerBytes = await readExactly(handle, file, 8, headerLength);
      const dataStart = 8 + headerLength;
      const { metadata, entries } = parseHeader(file, headerBytes, size - dataStart);
      const infos = new Map<string, TensorInfo>();
      for (const [name, e] of entries) {
        infos.set(name, {
          name,
          dtype: e.dtype,
          shape: e.shape,
          file,
          byteOffset: dataStart + e.begin,
          byteLength: e.end - e.begin,
        });
      }
      return new SafetensorsFile(file, handle, metadata, infos);
    } catch (err) {
      await handle.close().catch(() => undefined);
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
    if (this.#handle === null)
      fail('FILE_CLOSED', 'expected an open file, found it closed; open it again to read.', { file: this.path, tensor: name });
    const buffer = allocate(info);
    const bytes = new Uint8Array(buffer);
    await readInto(this.#handle, bytes, info);
    if (!HOST_IS_LITTLE_ENDIAN) swapBytesInPlace(bytes, DTYPE_SIZE[info.dtype]);
    return { dtype: info.dtype, shape: info.shape, data: viewAs(info.dtype, buffer) };
  }

  async close(): Promise<void> {
    const handle = this.#handle;
    this.#handle = null;
    await handle?.close();
  }
}

function allocate(info: TensorInfo): ArrayBuffer {
  try {
    return new ArrayBuffer(info.byteLength);
  } catch (cause) {
    return fail(
      'TENSOR_TOO_LARGE',
      `expected to allocate ${info.byteLength} bytes for this tensor in one buffer, found the runtime refuses (${(cause as Error).message}).`,
      { file: info.file, tensor: info.name, cause },
    );
  }
}

async function readExactly(handle: FileHandle, file: string, position: number, length: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(length);
  await readInto(handle, bytes, { file, byteOffset: position });
  return bytes;
}

async function readInto(handle: FileHandle, bytes: Uint8Array, at: { file: string; byteOffset: number; name?: string }): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const want = Math.min(bytes.length - done, MAX_READ);
    let bytesRead: number;
    try {
      ({ bytesRead } = await handle.read(bytes, done, want, at.byteOffset + done));
    } catch (cause) {
      return fail('IO_ERROR', `read of ${want} bytes at offset ${at.byteOffset + done} failed: ${(cause as Error).message}.`, {
        file: at.file,
        tensor: at.name,
        cause,
      });
    }
    if (bytesRead === 0) {
      fail(
        'SHORT_READ',
        `expected ${bytes.length} bytes at offset ${at.byteOffset}, found end of file after ${done}; the file changed since it was opened.`,
        { file: at.file, tensor: at.name },
      );
    }
    done += bytesRead;
  }
}
