// URL sources against a real HTTP server on 127.0.0.1: range requests as a static server or the hub answers
// them, and each way a server or a file can go wrong refused by name.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readTextFile, urlFiles, urlSource } from './index.js';
import { rejection, tempDir } from './test-utils/files.js';
import { serve, type TestServer } from './test-utils/http.js';

const BYTES = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7 + 3) % 251);

describe('urlSource / urlFiles', () => {
  let dir: string;
  let server: TestServer;
  beforeAll(async () => {
    dir = await tempDir();
    await writeFile(join(dir, 'data.bin'), BYTES);
    await writeFile(join(dir, 'config.json'), '\uFEFF{"a": 1}');
    await writeFile(join(dir, 'empty.bin'), new Uint8Array(0));
    server = await serve(dir);
  });
  beforeEach(() => {
    server.mode = 'normal';
  });

  it('size and ETag from the first answer; each read is a range request for exactly its bytes', async () => {
    const src = await urlSource(`${server.url}data.bin`);
    expect([src.name, src.size, src.stamp]).toEqual([`${server.url}data.bin`, 1000, 'etag:"v1-1000":1000']);
    const before = server.requests.length;
    expect([...(await src.read(0, 8))]).toEqual([...BYTES.subarray(0, 8)]);
    expect([...(await src.read(123, 400))]).toEqual([...BYTES.subarray(123, 523)]);
    expect([...(await src.read(999, 1))]).toEqual([BYTES[999]]);
    expect((await src.read(5, 0)).length).toBe(0);
    expect(server.requests.slice(before).map((r) => r.range)).toEqual(['bytes=0-7', 'bytes=123-522', 'bytes=999-999']);
    const past = await rejection(src.read(990, 20));
    expect([past.code, past.file]).toEqual(['SHORT_READ', src.name]);
    await src.close();
  });

  it('without an ETag the stamp is Last-Modified and size, and a size change is still caught', async () => {
    server.mode = 'no-etag';
    const src = await urlSource(`${server.url}data.bin`);
    expect(src.stamp).toMatch(/^last-modified:\w{3}, \d\d \w{3} \d{4} [\d:]{8} GMT:1000$/);
    await writeFile(join(dir, 'grows.bin'), BYTES.subarray(0, 10));
    const grows = await urlSource(`${server.url}grows.bin`);
    await writeFile(join(dir, 'grows.bin'), BYTES);
    expect((await rejection(grows.read(0, 4))).code).toBe('SOURCE_CHANGED');
  });

  it('an empty file has size 0 (the server answers 416 to bytes=0-0)', async () => {
    const src = await urlSource(`${server.url}empty.bin`);
    expect(src.size).toBe(0);
    expect((await src.read(0, 0)).length).toBe(0);
  });

  it('a server that ignores Range (HTTP 200, the whole file) is refused at open: RANGE_NOT_SUPPORTED', async () => {
    server.mode = 'ignore-range';
    const err = await rejection(urlSource(`${server.url}data.bin`));
    expect([err.code, err.file]).toEqual(['RANGE_NOT_SUPPORTED', `${server.url}data.bin`]);
    expect(err.message).toContain('found HTTP 200');
    expect(err.message).toContain('serve the model from a server that supports range requests');
    // ... and also when it starts ignoring it after the open.
    server.mode = 'normal';
    const src = await urlSource(`${server.url}data.bin`);
    server.mode = 'ignore-range';
    expect((await rejection(src.read(0, 10))).code).toBe('RANGE_NOT_SUPPORTED');
  });

  it('a file whose ETag changes between reads is refused: SOURCE_CHANGED naming both versions', async () => {
    server.mode = 'etag-changes';
    await writeFile(join(dir, 'changes.bin'), BYTES);
    const src = await urlSource(`${server.url}changes.bin`);
    const err = await rejection(src.read(0, 10));
    expect([err.code, err.file]).toEqual(['SOURCE_CHANGED', src.name]);
    expect(err.message).toContain('"v1-1000"');
    expect(err.message).toContain('"v2-1000"');
  });

  it('a short body is SHORT_READ, a longer one RANGE_NOT_SUPPORTED', async () => {
    const src = await urlSource(`${server.url}data.bin`);
    server.mode = 'short-body';
    const err = await rejection(src.read(100, 50));
    expect(err.code).toBe('SHORT_READ');
    expect(err.message).toContain('expected 50 bytes at offset 100, found a response of 49');
    server.mode = 'long-body';
    const long = await rejection(src.read(100, 50));
    expect([long.code, long.message]).toEqual([
      'RANGE_NOT_SUPPORTED',
      `${src.name}: expected 50 bytes at offset 100, found a longer response.`,
    ]);
  });

  it('HTTP errors and network failures are typed: 404 FILE_NOT_FOUND, 403 and 500 HTTP_ERROR, no server IO_ERROR', async () => {
    expect((await rejection(urlSource(`${server.url}missing.bin`))).code).toBe('FILE_NOT_FOUND');
    server.mode = 'forbidden';
    const forbidden = await rejection(urlSource(`${server.url}data.bin`));
    expect(forbidden.code).toBe('HTTP_ERROR');
    expect(forbidden.message).toContain('HTTP 403');
    expect(forbidden.message).toContain('Authorization header');
    server.mode = 'error-500';
    expect((await rejection(urlSource(`${server.url}data.bin`))).message).toContain('found HTTP 500');
    const down = await rejection(urlSource('http://127.0.0.1:1/x.bin'));
    expect(down.code).toBe('IO_ERROR');
    expect(down.message).toMatch(/fetch of bytes 0-0 failed \(.+\)/);
  });

  it('a server that answers a missing file with an HTML page (a single-page-app fallback) is named as such', async () => {
    server.mode = 'html-fallback';
    const err = await rejection(urlFiles(server.url).open('model.safetensors.index.json'));
    expect(err.code).toBe('HTTP_ERROR');
    expect(err.message).toContain('found HTTP 200 with an HTML page');
  });

  it('urlFiles: names relative to the base (with or without a trailing slash), 404 -> undefined, no way out', async () => {
    for (const base of [server.url, server.url.slice(0, -1)]) {
      const files = urlFiles(base);
      expect(files.root).toBe(base);
      expect((await files.open('data.bin'))?.size).toBe(1000);
      expect((await files.open('./data.bin'))?.name).toBe(`${server.url}data.bin`);
      expect(await files.open('nope.json')).toBeUndefined();
      for (const bad of ['../data.bin', '/etc/passwd', '']) expect((await rejection(files.open(bad))).code).toBe('FILE_OUTSIDE_DIR');
    }
    const sub = urlFiles(`${server.url}sub dir`);
    await writeFile(join(dir, 'a b#c.json'), '{}');
    expect(await urlFiles(server.url).open('a b#c.json')).toBeDefined(); // names are URL-encoded
    expect(await sub.open('x')).toBeUndefined();
  });

  it('init goes with every request (an Authorization header for a gated repository)', async () => {
    const before = server.requests.length;
    const src = await urlSource(`${server.url}data.bin`, { headers: { authorization: 'Bearer t' } });
    await src.read(10, 10);
    const files = urlFiles(server.url, { headers: { authorization: 'Bearer u' } });
    await (await files.open('data.bin'))?.read(0, 1);
    expect(server.requests.slice(before).map((r) => [r.range, r.authorization])).toEqual([
      ['bytes=0-0', 'Bearer t'],
      ['bytes=10-19', 'Bearer t'],
      ['bytes=0-0', 'Bearer u'],
      ['bytes=0-0', 'Bearer u'],
    ]);
  });

  it('readTextFile: the text (a byte-order mark kept), undefined when absent, FILE_TOO_LARGE over the limit', async () => {
    const files = urlFiles(server.url);
    expect(await readTextFile(files, 'config.json')).toBe('\uFEFF{"a": 1}');
    expect(await readTextFile(files, 'absent.json')).toBeUndefined();
    const err = await rejection(readTextFile(files, 'data.bin', 999));
    expect([err.code, err.message]).toEqual(['FILE_TOO_LARGE', `${server.url}data.bin: expected at most 999 bytes, found 1000.`]);
  });
});
