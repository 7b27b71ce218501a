/** Writing a safetensors file to disk (Node only): streamed tensor by tensor, then renamed into place. */
import { randomBytes } from 'node:crypto';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Tensor } from './dtype.js';
import { fail } from './errors.js';
import { plan } from './writer.js';

/**
 * Writes tensor by tensor (no second copy of the weights in memory) to a
 * temporary file beside `path`, then renames it into place, so readers never
 * see a half-written file.
 */
export async function writeSafetensors(path: string, tensors: Record<string, Tensor>, metadata?: Record<string, string>): Promise<void> {
  const file = resolve(path);
  const { header, parts } = plan(tensors, metadata, file);
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  let handle: FileHandle | undefined;
  try {
    handle = await open(tmp, 'w');
    await writeAll(handle, header);
    for (const p of parts) await writeAll(handle, p.bytes);
    await handle.close();
    handle = undefined;
    await rename(tmp, file);
  } catch (cause) {
    await handle?.close().catch(() => undefined);
    await rm(tmp, { force: true });
    fail('IO_ERROR', `writing failed: ${(cause as Error).message}.`, { file, cause });
  }
}

/** A single write may be partial and is capped at 2 GiB - 1, so loop in chunks. */
async function writeAll(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, done, Math.min(bytes.length - done, 1 << 30));
    done += bytesWritten;
  }
}
