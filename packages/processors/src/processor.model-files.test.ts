/**
 * Processor.fromPretrained(ModelFiles): the same outputs as from the directory path on every processor
 * case, with both tokenizer backends (the JS one checked against HF's recorded input_ids), the same size
 * guards, and the one rule a source without a listing cannot follow (chat_templates/).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { blobFiles, urlFiles } from '@vlmkit/safetensors';
import { afterAll, describe, expect, it } from 'vitest';
import { ProcessorError } from './errors.js';
import type { ByteSource, ModelFiles } from './model-files.js';
import * as browser from './platform.browser.js';
import { Processor, type ProcessorOutputs } from './processor.js';
import { processorCases } from './test-utils/cases.js';
import { fixturePath } from './test-utils/fixtures.js';
import { folderInMemory, memoryFiles } from './test-utils/memory-files.js';
import { jsTokenizerBackend } from './text/tokenizer-js.js';

const ids = (o: ProcessorOutputs) => Array.from(o.input_ids.data, Number);

for (const model of ['ernie', 'granite', 'qwen3vl']) {
  describe(`${model}: Processor.fromPretrained(ModelFiles)`, async () => {
    const fromDir = await Processor.fromPretrained(fixturePath(model));
    const fromFiles = await Processor.fromPretrained(folderInMemory(fixturePath(model)));
    const js = await Processor.fromPretrained(folderInMemory(fixturePath(model)), undefined, { backend: jsTokenizerBackend });

    it.each(processorCases(model).map((c) => [c.name, c] as const))('%s: same outputs as the path; JS tokenizer ids = HF', async (_, c) => {
      const a = await fromDir.processChat(c.messages, c.options);
      const b = await fromFiles.processChat(c.messages, c.options);
      expect(b).toEqual(a);
      const j = await js.processChat(c.messages, c.options);
      expect(ids(j)).toEqual(Array.from(c.expected.input_ids!.data as BigInt64Array, Number));
      expect(await js.decode(ids(j))).toBe(await fromDir.decode(ids(a)));
    });
  });
}

/** Serves the fixture folders on 127.0.0.1 with Range requests (206 + Content-Range), as a static server does. */
async function serveFixtures(): Promise<string> {
  const server = createServer((req, res) => {
    const path = join(fixturePath(), decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    let bytes: Buffer;
    try {
      bytes = readFileSync(path);
    } catch {
      res.writeHead(404).end();
      return;
    }
    const etag = `"${statSync(path).mtimeMs}-${bytes.length}"`;
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (m === null) {
      res.writeHead(200, { etag, 'content-length': bytes.length }).end(bytes);
      return;
    }
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]), bytes.length - 1);
    if (start >= bytes.length) {
      res.writeHead(416, { 'content-range': `bytes */${bytes.length}` }).end();
      return;
    }
    res.writeHead(206, { etag, 'content-range': `bytes ${start}-${end}/${bytes.length}`, 'content-length': end - start + 1 });
    res.end(bytes.subarray(start, end + 1));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

describe("through @vlmkit/safetensors' sources: urlFiles (HTTP ranges) and blobFiles", async () => {
  const base = await serveFixtures();
  for (const model of ['ernie', 'qwen3vl']) {
    const fromDir = await Processor.fromPretrained(fixturePath(model));
    const blobs = Object.fromEntries(
      readdirSync(fixturePath(model))
        .filter((f) => statSync(fixturePath(model, f)).isFile())
        .map((f) => [f, new Blob([readFileSync(fixturePath(model, f))])]),
    );
    const sources = {
      urlFiles: await Processor.fromPretrained(urlFiles(`${base}${model}/`), undefined, { backend: jsTokenizerBackend }),
      blobFiles: await Processor.fromPretrained(blobFiles(blobs, model), undefined, { backend: jsTokenizerBackend }),
    };
    for (const [how, p] of Object.entries(sources)) {
      it(`${model} from ${how} (JS tokenizer): every case's outputs equal the path's`, async () => {
        for (const c of processorCases(model))
          expect(await p.processChat(c.messages, c.options), c.name).toEqual(await fromDir.processChat(c.messages, c.options));
      });
    }
  }
});

/** A ModelFiles whose one file claims `size` bytes and fails if read. */
function claiming(name: string, size: number, base: ModelFiles): ModelFiles {
  return {
    root: base.root,
    async open(n: string): Promise<ByteSource | undefined> {
      if (n !== name) return base.open(n);
      return {
        name: `${base.root}/${n}`,
        size,
        stamp: 'x',
        read: () => Promise.reject(new Error('read past the size check')),
        close: async () => {},
      };
    },
  };
}

describe('processor files through ModelFiles', () => {
  const dir = fixturePath('granite');

  it('refuses a file over its limit by its size, before reading it', async () => {
    for (const [name, size] of [
      ['tokenizer.json', 512 * 1024 * 1024 + 1],
      ['tokenizer_config.json', 16 * 1024 * 1024 + 1],
      ['preprocessor_config.json', 16 * 1024 * 1024 + 1],
    ] as const) {
      const err = await Processor.fromPretrained(claiming(name, size, folderInMemory(dir))).catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(ProcessorError);
      expect((err as Error).message).toContain(`${name} is ${size} bytes, over the`);
    }
  });

  it('names the source when it fails to open a file', async () => {
    const base = folderInMemory(dir);
    const failing: ModelFiles = {
      root: 'https://example.test/m',
      open: (n) => (n === 'tokenizer_config.json' ? Promise.reject(new Error('HTTP 500')) : base.open(n)),
    };
    await expect(Processor.fromPretrained(failing)).rejects.toThrow(
      /https:\/\/example\.test\/m\/tokenizer_config\.json cannot be read: HTTP 500/,
    );
  });

  it('reads chat_templates/ where the source lists it, as HF; without a listing, chat_template.json', async () => {
    const base = folderInMemory(dir);
    const template = readFileSync(fixturePath('granite', 'chat_template.jinja'), 'utf8');
    const contents: Record<string, string> = {};
    for (const name of [
      'tokenizer.json',
      'tokenizer_config.json',
      'preprocessor_config.json',
      'processor_config.json',
      'special_tokens_map.json',
    ]) {
      const s = (await base.open(name))!;
      contents[name] = new TextDecoder().decode(await s.read(0, s.size));
    }
    contents['chat_template.json'] = JSON.stringify({ chat_template: template });
    contents['chat_templates/other.jinja'] = 'x';
    const unlisted = memoryFiles(dir, contents);
    const p = await Processor.fromPretrained(unlisted);
    expect(p.applyChatTemplate([{ role: 'user', content: 'hi' }])).toBe(
      (await Processor.fromPretrained(dir)).applyChatTemplate([{ role: 'user', content: 'hi' }]),
    );
    const listed = { ...unlisted, open: unlisted.open, list: async () => Object.keys(contents).sort() };
    await expect(Processor.fromPretrained(listed)).rejects.toThrow(/both chat_template\.json and chat_templates\/\*\.jinja/);
  });
});

describe('the browser platform (platform.browser.ts, run in Node)', () => {
  const refuses = async (p: Promise<unknown>, what: RegExp) => {
    const err = await p.catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'ProcessorError', code: 'UNSUPPORTED_PLATFORM' });
    expect((err as Error).message).toMatch(what);
  };

  it('paths and video files, saying what to pass instead', async () => {
    await refuses((async () => browser.processorDirFiles('/models/x'))(), /urlFiles.*blobFiles/);
    await refuses(browser.readImageFile('cat.jpg', 1e6), /Blob\/File, bytes, ImageData or ImageBitmap/);
    await refuses(browser.decodeVideoFile('clip.mp4', {}), /\{ frames: .*fps \}/);
  });

  it('images a browser decodes otherwise than Pillow, by their header, before decoding', async () => {
    const tiff = new Uint8Array([0x49, 0x49, 0x2a, 0, 8, 0, 0, 0]);
    await refuses(browser.decodeImageBytes(tiff, 'x.tif', 1e9), /TIFF/);
    const cmyk = readFileSync(fixturePath('image-processors/decode/cmyk.jpg'));
    await refuses(browser.decodeImageBytes(cmyk, 'cmyk.jpg', 1e9), /CMYK JPEG/);
  });

  it('a WebP with a chunk cut short, which Pillow refuses and a browser may decode', async () => {
    const webp = readFileSync(fixturePath('image-processors/decode/exif8.webp'));
    const err = await browser.decodeImageBytes(webp.subarray(0, webp.length - 5), 'cut.webp', 1e9).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'NOT_AN_IMAGE', message: expect.stringMatching(/cut short/) });
  });

  it('16-bit PNGs, which it decodes itself, as Pillow (the whole browser path, run in Node)', async () => {
    for (const f of ['i16.png', 'la16.png', 'rgb16.png']) {
      const got = await browser.decodeImageBytes(readFileSync(fixturePath('image-processors/decode', f)), f, 1e9);
      expect(Buffer.from(got.data).equals(readFileSync(fixturePath('image-processors/decode', `${f}.rgb`))), f).toBe(true);
    }
  });
});
