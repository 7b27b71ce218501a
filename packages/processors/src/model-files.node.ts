import { constants } from 'node:fs';
import { type FileHandle, open, readdir, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import type { ByteSource, FolderListing, ModelFiles } from './model-files.js';

/**
 * A processor directory as ModelFiles, with HF's view of it (cached_file: os.path.isfile): a name that is
 * not a regular file once links are followed (a directory, a FIFO, a device) is absent and never opened,
 * so nothing blocks; a name is joined as os.path.join joins it (an absolute one stands alone).
 */
export function processorDirFiles(dir: string): ModelFiles & FolderListing {
  return {
    root: dir,
    async open(name: string): Promise<ByteSource | undefined> {
      const path = isAbsolute(name) ? name : join(dir, name);
      try {
        if (!(await stat(path)).isFile()) return undefined;
      } catch (e) {
        const errno = (e as NodeJS.ErrnoException).code;
        if (errno === 'ENOENT' || errno === 'ENOTDIR') return undefined;
        throw e;
      }
      // O_NONBLOCK: a FIFO put in its place after the check opens at once instead of waiting for a writer.
      const handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
      try {
        const st = await handle.stat();
        if (!st.isFile()) {
          await handle.close();
          return undefined;
        }
        return fileSource(path, handle, st.size, `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`);
      } catch (e) {
        await handle.close();
        throw e;
      }
    },
    async listFolder(sub: string): Promise<readonly string[] | undefined> {
      try {
        return await readdir(join(dir, sub));
      } catch {
        return undefined;
      }
    },
  };
}

function fileSource(name: string, handle: FileHandle, size: number, stamp: string): ByteSource {
  return {
    name,
    size,
    stamp,
    async read(offset: number, length: number): Promise<Uint8Array> {
      const out = new Uint8Array(length);
      let n = 0;
      while (n < length) {
        const { bytesRead } = await handle.read(out, n, length - n, offset + n);
        if (bytesRead === 0) throw new Error(`the file ended at ${offset + n} bytes, before ${offset + length} (it changed while read)`);
        n += bytesRead;
      }
      return out;
    },
    close: () => handle.close(),
  };
}
