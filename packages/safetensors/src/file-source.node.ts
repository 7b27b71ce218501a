/**
 * A local file as a ByteSource: one read-only handle, positional reads into a fresh buffer of exactly the
 * length asked for (the tensor's), in chunks of at most 1 GiB (fs reads are capped at 2 GiB - 1 per call).
 */
import type { FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fail } from './errors.js';
import { openRegularFile } from './regular-file.node.js';
import type { ByteSource } from './source.js';

const MAX_READ = 1 << 30;

/** The regular file at `path` (absolute in `name`); stamp: device, inode, size and mtime in ns. */
export async function fileSource(path: string): Promise<ByteSource> {
  const file = resolve(path);
  const handle = await openRegularFile(file);
  try {
    const st = await handle.stat({ bigint: true });
    return new FileSource(file, handle, Number(st.size), `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}`);
  } catch (cause) {
    await handle.close().catch(() => undefined);
    return fail('IO_ERROR', `cannot stat the file: ${(cause as Error).message}.`, { file, cause });
  }
}

class FileSource implements ByteSource {
  #handle: FileHandle | null;
  readonly path: string;

  constructor(
    readonly name: string,
    handle: FileHandle,
    readonly size: number,
    readonly stamp: string,
  ) {
    this.#handle = handle;
    this.path = name;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const handle = this.#handle;
    if (handle === null) fail('FILE_CLOSED', 'expected an open file, found it closed; open it again to read.', { file: this.name });
    const bytes = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const want = Math.min(length - done, MAX_READ);
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(bytes, done, want, offset + done));
      } catch (cause) {
        return fail('IO_ERROR', `read of ${want} bytes at offset ${offset + done} failed: ${(cause as Error).message}.`, {
          file: this.name,
          cause,
        });
      }
      if (bytesRead === 0) {
        fail(
          'SHORT_READ',
          `expected ${length} bytes at offset ${offset}, found end of file after ${done}; the file changed since it was opened.`,
          { file: this.name },
        );
      }
      done += bytesRead;
    }
    return bytes;
  }

  async close(): Promise<void> {
    const handle = this.#handle;
    this.#handle = null;
    await handle?.close();
  }
}
