// The static server `pnpm test:browser` runs the harness from: node:http on 127.0.0.1, an ephemeral port,
// read-only, one folder per URL prefix and nothing outside them, no directory listing. Range requests get
// 206 + Content-Range (urlSource reads safetensors headers and tensors by range); COOP/COEP make the page
// cross-origin isolated, which onnxruntime-web needs for WASM threads (SharedArrayBuffer).
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, sep } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.jinja': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
  '.map': 'application/json; charset=utf-8',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
  '.svg': 'image/svg+xml',
};

const ISOLATION = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
  'cross-origin-resource-policy': 'same-origin',
  'x-content-type-options': 'nosniff',
};

/**
 * One `bytes=` range of a file of `size` bytes (a single range, as urlSource asks): [start, end] inclusive,
 * 'unsatisfiable' for a range past the end, undefined for a header that is not one range (served whole, as
 * RFC 9110 allows).
 */
export function parseRange(header, size) {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return [start, end];
}

/** Maps a URL path to a file under one of `mounts` ({ '/prefix/': dir }); undefined when it is outside them. */
async function locate(mounts, urlPath) {
  let path;
  try {
    path = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  if (path.includes('\0') || path.split('/').some((part) => part === '..' || part.startsWith('.'))) return undefined;
  const prefix = Object.keys(mounts)
    .filter((p) => path.startsWith(p))
    .sort((a, b) => b.length - a.length)[0];
  if (prefix === undefined) return undefined;
  const root = await realpath(mounts[prefix]);
  let file = join(root, path.slice(prefix.length) || 'index.html');
  try {
    file = await realpath(file);
  } catch {
    return undefined;
  }
  // A link must not lead out of its mount either.
  if (!file.startsWith(root + sep)) return undefined;
  const st = await stat(file);
  return st.isFile() ? { file, st } : undefined;
}

/**
 * Starts the server; resolves to { url, close() }. `log` receives one line per refused request other than a
 * plain 404 (readers probe for optional files: a 404 is their answer "absent").
 */
export async function startServer(mounts, log = () => {}) {
  const server = createServer((req, res) => {
    handle(mounts, req, res).catch((err) => {
      log(`500 ${req.url}: ${err.message}`);
      if (!res.headersSent) res.writeHead(500, ISOLATION);
      res.end();
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  async function handle(mounts, req, res) {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...ISOLATION, allow: 'GET, HEAD' });
      return void res.end();
    }
    const found = await locate(mounts, new URL(req.url ?? '/', 'http://x').pathname);
    if (!found) {
      res.writeHead(404, { ...ISOLATION, 'content-type': 'text/plain; charset=utf-8' });
      return void res.end('not found\n');
    }
    const { file, st } = found;
    const headers = {
      ...ISOLATION,
      'content-type': TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream',
      'accept-ranges': 'bytes',
      etag: `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`,
      'last-modified': st.mtime.toUTCString(),
      'cache-control': 'no-cache',
    };
    const range = req.headers.range === undefined ? undefined : parseRange(req.headers.range, st.size);
    if (range === 'unsatisfiable') {
      res.writeHead(416, { ...headers, 'content-range': `bytes */${st.size}` });
      return void res.end();
    }
    const [start, end] = range ?? [0, st.size - 1];
    const length = st.size === 0 ? 0 : end - start + 1;
    res.writeHead(range ? 206 : 200, {
      ...headers,
      'content-length': String(length),
      ...(range ? { 'content-range': `bytes ${start}-${end}/${st.size}` } : {}),
    });
    if (req.method === 'HEAD' || length === 0) return void res.end();
    await new Promise((resolve, reject) => {
      const stream = createReadStream(file, { start, end });
      stream.on('error', reject);
      res.on('close', resolve);
      stream.pipe(res);
    });
  }
}
