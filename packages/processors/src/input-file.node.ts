import { constants, type Stats } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { describeFileKind } from '@vlmkit/safetensors';
import { ProcessorError, type ProcessorErrorCode } from './errors.js';

/** What a media file is called in errors and which codes refuse it. */
export interface InputKind {
  /** 'image' or 'video'. */
  readonly what: string;
  /** The code for a path that cannot be read or is not a regular file. */
  readonly unreadable: ProcessorErrorCode;
  /** The code for a file over the size limit. */
  readonly tooLarge: ProcessorErrorCode;
  /** The option that raises the size limit, named in the error. */
  readonly option: string;
}

function tooLarge(path: string, size: number, maxBytes: number, kind: InputKind): ProcessorError {
  return new ProcessorError(
    kind.tooLarge,
    `${path}: the file is ${size} bytes or more, over the limit of ${maxBytes} for ${kind.what} files; ` +
      `use a smaller file or raise ${kind.option}.`,
  );
}

function check(path: string, st: Stats, maxBytes: number, kind: InputKind): void {
  if (!st.isFile()) {
    throw new ProcessorError(
      kind.unreadable,
      `${path}: is ${describeFileKind(st)}, not a regular file; only regular ${kind.what} files are read (copy the data to a file first).`,
    );
  }
  if (st.size > maxBytes) throw tooLarge(path, st.size, maxBytes, kind);
}

/**
 * Refuses, without opening it, a path that is not a regular file once symbolic links are
 * followed (a FIFO would block the open, a device such as /dev/zero never ends) or that is over
 * `maxBytes`.
 */
export async function checkRegularFile(path: string, maxBytes: number, kind: InputKind): Promise<void> {
  let st: Stats;
  try {
    st = await stat(path);
  } catch (e) {
    throw new ProcessorError(kind.unreadable, `${path}: cannot read the file (${(e as Error).message}).`, { cause: e });
  }
  check(path, st, maxBytes, kind);
}

/**
 * Reads a regular file of at most `maxBytes`. The path is checked first (checkRegularFile), then
 * opened without blocking and checked again on the descriptor, and at most `maxBytes + 1` bytes
 * are read: a file replaced or grown after the check is still refused, never read past the limit.
 */
export async function readRegularFile(path: string, maxBytes: number, kind: InputKind): Promise<Uint8Array> {
  await checkRegularFile(path, maxBytes, kind);
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    // O_NONBLOCK: a FIFO swapped in after the check opens at once instead of waiting for a writer.
    handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0));
  } catch (e) {
    throw new ProcessorError(kind.unreadable, `${path}: cannot read the file (${(e as Error).message}).`, { cause: e });
  }
  try {
    const st = await handle.stat();
    check(path, st, maxBytes, kind);
    let buffer = new Uint8Array(Math.min(st.size, maxBytes) + 1);
    let n = 0;
    for (;;) {
      if (n === buffer.length) {
        // The file grew since fstat: read on, never past the limit.
        if (n > maxBytes) throw tooLarge(path, n, maxBytes, kind);
        const grown = new Uint8Array(Math.min(buffer.length * 2, maxBytes + 1));
        grown.set(buffer);
        buffer = grown;
      }
      const { bytesRead } = await handle.read(buffer, n, buffer.length - n, null);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    return buffer.subarray(0, n);
  } catch (e) {
    if (e instanceof ProcessorError) throw e;
    throw new ProcessorError(kind.unreadable, `${path}: cannot read the file (${(e as Error).message}).`, { cause: e });
  } finally {
    await handle.close();
  }
}
