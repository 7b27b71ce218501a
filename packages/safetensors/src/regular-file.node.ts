/**
 * Opening a checkpoint's files without trusting what the path is: a FIFO would block `open` until a
 * writer appears, a device such as /dev/zero never ends. Files are opened non-blocking and checked on
 * the descriptor (so a path swapped after a check is caught too); only regular files are read.
 */
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { fail } from './errors.js';
import { describeFileKind } from './regular-file.js';
import { MAX_JSON_FILE_BYTES } from './text-file.js';

/** A read-only handle on a regular file; NOT_A_FILE (naming what it is) for anything else, FILE_NOT_FOUND, IO_ERROR. */
export async function openRegularFile(file: string): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0));
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return fail('FILE_NOT_FOUND', 'expected a file here, found nothing.', { file, cause });
    if (code === 'EISDIR') return fail('NOT_A_FILE', 'expected a regular file, found a directory.', { file, cause });
    return fail('IO_ERROR', `cannot open the file: ${(cause as Error).message}.`, { file, cause });
  }
  const st = await handle.stat().catch(async (cause: Error) => {
    await handle.close().catch(() => undefined);
    return fail('IO_ERROR', `cannot stat the file: ${cause.message}.`, { file, cause });
  });
  if (!st.isFile()) {
    await handle.close().catch(() => undefined);
    fail('NOT_A_FILE', `expected a regular file, found ${describeFileKind(st)}; only regular files are read.`, { file });
  }
  return handle;
}

/**
 * The UTF-8 text of a regular file of at most `maxBytes` (FILE_TOO_LARGE beyond; at most `maxBytes + 1`
 * bytes are ever read, so a file that grows while read is still bounded).
 */
export async function readRegularTextFile(file: string, maxBytes: number = MAX_JSON_FILE_BYTES): Promise<string> {
  const handle = await openRegularFile(file);
  try {
    const size = (await handle.stat()).size;
    if (size > maxBytes) fail('FILE_TOO_LARGE', `expected at most ${maxBytes} bytes, found ${size}.`, { file });
    const buf = Buffer.allocUnsafe(Math.min(size, maxBytes) + 1);
    let n = 0;
    while (n < buf.length) {
      const { bytesRead } = await handle.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    if (n > maxBytes) fail('FILE_TOO_LARGE', `expected at most ${maxBytes} bytes, found more (the file grew while read).`, { file });
    return buf.subarray(0, n).toString('utf8');
  } finally {
    await handle.close().catch(() => undefined);
  }
}
