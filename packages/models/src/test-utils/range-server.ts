// A static file server on 127.0.0.1 with HTTP range requests (206 + Content-Range, an ETag per file version):
// what `urlFiles` reads a model from, as a page does. `requests` counts what was asked, for the tests' checks.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize, sep } from 'node:path';

export interface RangeServer {
  /** The served folder's URL, ending in '/'. */
  readonly url: string;
  /** Requests by path: how many, and whether each asked for a range. */
  readonly requests: { path: string; range: boolean }[];
  close(): Promise<void>;
}

export async function rangeServer(root: string): Promise<RangeServer> {
  const requests: { path: string; range: boolean }[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
      const file = normalize(join(root, path));
      const range = req.headers.range;
      requests.push({ path, range: range !== undefined });
      const st = await stat(file).catch(() => undefined);
      if (!file.startsWith(root + sep) || st === undefined || !st.isFile()) {
        res.writeHead(404).end();
        return;
      }
      const etag = `"${st.size}-${st.mtimeMs}"`;
      const m = range === undefined ? null : /^bytes=(\d+)-(\d+)$/.exec(range);
      if (m === null) {
        res.writeHead(200, { 'content-length': st.size, etag });
        createReadStream(file).pipe(res);
        return;
      }
      const start = Number(m[1]);
      const end = Math.min(Number(m[2]), st.size - 1);
      if (start >= st.size) {
        res.writeHead(416, { 'content-range': `bytes */${st.size}` }).end();
        return;
      }
      res.writeHead(206, { 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${st.size}`, etag });
      createReadStream(file, { start, end }).pipe(res);
    })();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    requests,
    close: () => new Promise((ok) => server.close(() => ok())),
  };
}
