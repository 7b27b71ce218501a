/**
 * Bytes from an HTTP(S) URL by range requests, in the browser and in Node alike (fetch): the first request
 * (bytes 0-0) gives the size (Content-Range) and the version (ETag, else Last-Modified); every read then asks
 * for exactly its bytes and checks that the answer is a 206 of those bytes of the same version. A server that
 * ignores Range would send the whole file for every tensor, and a file replaced between two reads would mix
 * two checkpoints' bytes: both are refused by name, never worked around.
 */
import { fail, SafetensorsError } from './errors.js';
import { checkedName } from './names.js';
import type { ByteSource, ModelFiles } from './source.js';

/** A ByteSource over the file at `url`; FILE_NOT_FOUND on HTTP 404. `init` (headers, credentials, signal) goes with every request. */
export async function urlSource(url: string | URL, init?: RequestInit): Promise<ByteSource> {
  const source = await openUrl(String(url), init);
  if (source === undefined) fail('FILE_NOT_FOUND', 'expected a file at this URL, found HTTP 404 Not Found.', { file: String(url) });
  return source;
}

/**
 * The model directory at `baseUrl` (a static server's folder, or a hub repository's
 * `https://huggingface.co/<org>/<name>/resolve/<revision>/`): files are opened by range requests to
 * `baseUrl/<name>`, and a 404 (or 410) means absent. `init` (an Authorization header for a gated repository,
 * a signal) goes with every request. A cross-origin server must allow the page's origin and expose
 * Content-Range and ETag (Access-Control-Expose-Headers); the hub does.
 */
export function urlFiles(baseUrl: string | URL, init?: RequestInit): ModelFiles {
  const root = String(baseUrl);
  const base = root.endsWith('/') ? root : `${root}/`;
  return {
    root,
    async open(name: string): Promise<ByteSource | undefined> {
      const key = checkedName(root, name);
      return openUrl(new URL(key.split('/').map(encodeURIComponent).join('/'), base).href, init);
    },
  };
}

interface Range {
  start: number;
  end: number;
  total: number;
}

async function openUrl(url: string, init: RequestInit | undefined): Promise<ByteSource | undefined> {
  const first = await get(url, init, 0, 1);
  if (first.status === 404 || first.status === 410) {
    await discard(first);
    return undefined;
  }
  let size: number;
  if (first.status === 416) {
    // bytes=0-0 of an empty file is unsatisfiable; the server says so with `Content-Range: bytes */0`.
    size = unsatisfiedTotal(first);
    await discard(first);
    if (size !== 0)
      fail('HTTP_ERROR', `expected bytes 0-0 of a file of ${size} bytes, found HTTP 416 Range Not Satisfiable.`, { file: url });
  } else {
    checkStatus(first, url, 0, 1);
    size = contentRange(first, url, 0, 1).total;
    await body(first, url, 0, 1);
  }
  const etag = first.headers.get('etag');
  const lastModified = etag === null ? first.headers.get('last-modified') : null;
  const version = etag ?? lastModified;
  const stamp = etag !== null ? `etag:${etag}:${size}` : lastModified !== null ? `last-modified:${lastModified}:${size}` : `size:${size}`;
  return {
    name: url,
    size,
    stamp,
    async read(offset: number, length: number): Promise<Uint8Array> {
      if (offset + length > size) {
        fail('SHORT_READ', `expected ${length} bytes at offset ${offset}, found the file holds only ${size}.`, { file: url });
      }
      if (length === 0) return new Uint8Array(0);
      const res = await get(url, init, offset, length);
      checkStatus(res, url, offset, length);
      const now = res.headers.get(etag !== null ? 'etag' : 'last-modified');
      const range = contentRange(res, url, offset, length);
      if (range.total !== size || (version !== null && now !== version)) {
        await discard(res);
        const was = version === null ? `${size} bytes` : `${etag !== null ? 'ETag' : 'Last-Modified'} ${version}, ${size} bytes`;
        const is = version === null ? `${range.total} bytes` : `${now ?? 'none'}, ${range.total} bytes`;
        fail('SOURCE_CHANGED', `expected the file as first opened (${was}), found it changed (${is}); open the model again.`, {
          file: url,
        });
      }
      return body(res, url, offset, length);
    },
    async close(): Promise<void> {
      // Nothing is held open: reads after close still work (a graph's tensors may be read after the checkpoint closed).
    },
  };
}

/** GET of `length` bytes at `offset`, network failures typed (an abort is passed on as it is). */
async function get(url: string, init: RequestInit | undefined, offset: number, length: number): Promise<Response> {
  const headers = new Headers(init?.headers);
  headers.set('range', `bytes=${offset}-${offset + length - 1}`);
  // The bytes as stored: a compressed answer's Content-Range would count compressed bytes. (Browsers drop it.)
  headers.set('accept-encoding', 'identity');
  try {
    return await fetch(url, { ...init, method: 'GET', headers });
  } catch (cause) {
    if ((cause as Error).name === 'AbortError') throw cause;
    const why = (cause as { cause?: Error }).cause?.message ?? (cause as Error).message;
    return fail(
      'IO_ERROR',
      `fetch of bytes ${offset}-${offset + length - 1} failed (${why}); check the URL and the network, and from a page that the server allows this origin (CORS).`,
      { file: url, cause },
    );
  }
}

function checkStatus(res: Response, url: string, offset: number, length: number): void {
  if (res.status === 206) return;
  void discard(res);
  const asked = `bytes ${offset}-${offset + length - 1}`;
  if (res.status === 200 && res.headers.get('content-type')?.startsWith('text/html')) {
    fail(
      'HTTP_ERROR',
      `expected HTTP 206 Partial Content for ${asked}, found HTTP 200 with an HTML page: the server answers this name with a page (as a single-page-app fallback does for a missing file); serve the model folder from a static file server that answers 404 for a missing file.`,
      { file: url },
    );
  }
  if (res.status === 200) {
    fail(
      'RANGE_NOT_SUPPORTED',
      `expected HTTP 206 Partial Content for ${asked}, found HTTP 200 (the server ignores Range and sends the whole file); serve the model from a server that supports range requests (any static file server, the Hugging Face hub).`,
      { file: url },
    );
  }
  if (res.status === 416) {
    fail('SOURCE_CHANGED', `expected ${asked} to exist, found HTTP 416 Range Not Satisfiable: the file shrank since it was opened.`, {
      file: url,
    });
  }
  const hint = res.status === 401 || res.status === 403 ? ' (a gated or private repository needs an Authorization header in init)' : '';
  fail('HTTP_ERROR', `expected HTTP 206 Partial Content for ${asked}, found HTTP ${res.status} ${res.statusText}${hint}.`, { file: url });
}

/** The answer's Content-Range; it must be the bytes asked for. */
function contentRange(res: Response, url: string, offset: number, length: number): Range {
  const header = res.headers.get('content-range');
  const m = header === null ? null : /^bytes (\d+)-(\d+)\/(\d+)$/.exec(header.trim());
  const range = m === null ? undefined : { start: Number(m[1]), end: Number(m[2]), total: Number(m[3]) };
  if (range === undefined || range.start !== offset || range.end !== offset + length - 1) {
    void discard(res);
    const found =
      header === null ? 'no Content-Range header (a cross-origin server must expose it: Access-Control-Expose-Headers)' : `'${header}'`;
    fail('RANGE_NOT_SUPPORTED', `expected Content-Range 'bytes ${offset}-${offset + length - 1}/<size>', found ${found}.`, { file: url });
  }
  return range;
}

function unsatisfiedTotal(res: Response): number {
  const m = /^bytes \*\/(\d+)$/.exec(res.headers.get('content-range')?.trim() ?? '');
  return m === null ? Number.NaN : Number(m[1]);
}

/**
 * The body, streamed into one buffer of exactly `length` bytes allocated first: the peak is the tensor once,
 * not its chunks and then their concatenation (which would double it, and a page's memory is tight).
 */
async function body(res: Response, url: string, offset: number, length: number): Promise<Uint8Array> {
  const out = new Uint8Array(length); // a RangeError here is the caller's TENSOR_TOO_LARGE
  const reader = res.body?.getReader();
  let done = 0;
  try {
    for (;;) {
      const chunk = reader === undefined ? undefined : await reader.read();
      if (chunk === undefined || chunk.done) break;
      if (done + chunk.value.length > length) {
        await reader?.cancel().catch(() => undefined);
        fail('RANGE_NOT_SUPPORTED', `expected ${length} bytes at offset ${offset}, found a longer response.`, { file: url });
      }
      out.set(chunk.value, done);
      done += chunk.value.length;
    }
  } catch (cause) {
    if (cause instanceof SafetensorsError || (cause as Error).name === 'AbortError') throw cause;
    return fail(
      'SHORT_READ',
      `expected ${length} bytes at offset ${offset}, found the response ended early (${(cause as Error).message}).`,
      {
        file: url,
        cause,
      },
    );
  }
  if (done !== length) {
    fail('SHORT_READ', `expected ${length} bytes at offset ${offset}, found a response of ${done}.`, { file: url });
  }
  return out;
}

async function discard(res: Response): Promise<void> {
  await res.body?.cancel().catch(() => undefined);
}
