import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ByteSource, ModelFiles } from '../model-files.js';

/** ModelFiles over an in-memory name -> contents map (no listing, as over HTTP). */
export function memoryFiles(root: string, contents: Record<string, string | Uint8Array>): ModelFiles & { opened: string[] } {
  const opened: string[] = [];
  return {
    root,
    opened,
    async open(name: string): Promise<ByteSource | undefined> {
      const c = contents[name];
      if (c === undefined) return undefined;
      opened.push(name);
      const bytes = typeof c === 'string' ? new TextEncoder().encode(c) : c;
      return {
        name: `${root}/${name}`,
        size: bytes.length,
        stamp: String(bytes.length),
        async read(offset: number, length: number) {
          if (offset + length > bytes.length) throw new Error('SHORT_READ');
          return bytes.slice(offset, offset + length);
        },
        async close() {},
      };
    },
  };
}

/** The regular files at the top of `dir` (and in its chat_templates/), read into memoryFiles. */
export function folderInMemory(dir: string): ModelFiles & { opened: string[] } {
  const contents: Record<string, Uint8Array> = {};
  for (const f of readdirSync(dir)) {
    if (statSync(join(dir, f)).isFile()) contents[f] = new Uint8Array(readFileSync(join(dir, f)));
  }
  return memoryFiles(dir, contents);
}
