/**
 * A static file server on 127.0.0.1 for tests of URL sources: serves a directory with HTTP range requests
 * as a static server (or the hub) does, and can misbehave on purpose (`mode`): ignore Range, change the
 * ETag after the first answer, send a short body, answer an error status.
 */
import { readFile, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize, sep } from 'node:path';
import { afterAll } from 'vitest';

export type ServeMode =
  | 'normal'
  | 'ignore-range'
  | 'etag-changes'
  | 'short-body'
  | 'no-etag'
  | 'error-500'
  | 'forbidden'
  | 'html-fallback'
  | 'long-body';

export interface TestServer {
  /** http://127.0.0.1:<port>/ */
  readonly url: string;
  /** How the next requests are answered. */
  mode: ServeMode;
  /** Every request: path, Range and Authorization headers. */
  readonly requests: { path: string; range: string | undefined; authorization: string | undefined }[];
  /** Body bytes sent, per path. */
  readonly sent: Map<string, number>;
}

/** Serves `root` until the test file ends. */
export async function serve(root: string): Promise<TestServer> {
  const state: TestServer = { url: '', mode: 'normal', requests: [], sent: new Map() };
  const answered = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
      const range = req.headers.range;
      state.requests.push({ path, range, authorization: req.headers.authorization });
      const file = normalize(join(root, path));
      const st = file.startsWith(root + sep) ? await stat(file).catch(() => undefined) : undefined;
      if (state.mode === 'error-500' || state.mode === 'forbidden') {
        res.writeHead(state.mode === 'forbidden' ? 403 : 500).end();
        return;
      }
      if (st === undefined || !st.isFile()) {
        if (state.mode === 'html-fallback') res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>');
        else res.writeHead(404).end('not found');
        return;
      }
      const bytes = await readFile(file);
      const n = (answered.get(path) ?? 0) + 1;
      answered.set(path, n);
      const headers: Record<string, string> = { 'last-modified': new Date(st.mtimeMs).toUTCString() };
      if (state.mode !== 'no-etag') headers.etag = state.mode === 'etag-changes' && n > 1 ? `"v2-${st.size}"` : `"v1-${st.size}"`;
      const m = /^bytes=(\d+)-(\d+)$/.exec(range ?? '');
      const send = (status: number, body: Uint8Array, extra: Record<string, string> = {}) => {
        state.sent.set(path, (state.sent.get(path) ?? 0) + body.length);
        res.writeHead(status, { ...headers, ...extra, 'content-length': String(body.length) }).end(body);
      };
      if (m === null || state.mode === 'ignore-range') return send(200, bytes);
      const start = Number(m[1]);
      const end = Math.min(Number(m[2]), bytes.length - 1);
      if (start >= bytes.length) return send(416, new Uint8Array(0), { 'content-range': `bytes */${bytes.length}` });
      const body = bytes.subarray(start, end + 1);
      const answer =
        state.mode === 'short-body'
          ? body.subarray(0, body.length - 1)
          : state.mode === 'long-body'
            ? bytes.subarray(start, end + 2)
            : body;
      send(206, answer, {
        'content-range': `bytes ${start}-${end}/${bytes.length}`,
      });
    })().catch((err: Error) => res.writeHead(500).end(err.message));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((ok) => server.close(() => ok()));
  });
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, { url: `http://127.0.0.1:${port}/` });
}
