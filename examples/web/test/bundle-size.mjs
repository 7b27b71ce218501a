// The demo bundle's size as a user downloads it: JS and WASM apart, raw and gzip.
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';

async function* files(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.isFile()) yield path;
  }
}

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;

/** Sizes of the built page by kind (js, wasm, other), each with raw and gzip bytes and the largest files. */
export async function bundleSizes(dist) {
  const kinds = {};
  for await (const path of files(dist)) {
    const ext = extname(path);
    const kind = ext === '.js' || ext === '.mjs' ? 'js' : ext === '.wasm' ? 'wasm' : 'other';
    const bytes = await readFile(path);
    kinds[kind] ??= { raw: 0, gzip: 0, files: [] };
    const k = kinds[kind];
    const gz = gzipSync(bytes, { level: 9 }).byteLength;
    k.raw += bytes.byteLength;
    k.gzip += gz;
    k.files.push({ name: relative(dist, path), raw: bytes.byteLength, gzip: gz });
  }
  return kinds;
}

export function formatSizes(kinds) {
  return ['js', 'wasm', 'other']
    .filter((k) => kinds[k])
    .map((k) => {
      const { raw, gzip, files } = kinds[k];
      const top = files
        .sort((a, b) => b.raw - a.raw)
        .slice(0, 3)
        .map((f) => `${f.name} ${kib(f.raw)}`)
        .join(', ');
      return `${k}: ${kib(raw)} raw, ${kib(gzip)} gzip (${files.length} files; largest: ${top})`;
    });
}
