// The OPFS store's code in Node, over a small File System Access fake with OPFS's rules (a writable replaces
// its file on close only; a file with an open writable cannot be removed). The real OPFS is checked in
// headless Chromium by examples/web/src/checks/cache.ts (pnpm test:browser).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ModelError } from './errors.js';
import { openPageCache } from './graph-cache.browser.js';

class FakeFile {
  bytes: Uint8Array = new Uint8Array(0);
  lastModified = 1;
  writers = 0;
}

class FakeDir {
  readonly kind = 'directory';
  readonly children = new Map<string, FakeDir | FakeFile>();

  async getDirectoryHandle(name: string, o?: { create?: boolean }): Promise<FakeDir> {
    let c = this.children.get(name);
    if (c === undefined && o?.create) {
      c = new FakeDir();
      this.children.set(name, c);
    }
    if (c === undefined) throw new DOMException(`${name} not found`, 'NotFoundError');
    if (!(c instanceof FakeDir)) throw new DOMException(`${name} is a file`, 'TypeMismatchError');
    return c;
  }

  async getFileHandle(name: string, o?: { create?: boolean }) {
    let c = this.children.get(name);
    if (c === undefined && o?.create) {
      c = new FakeFile();
      this.children.set(name, c);
    }
    if (c === undefined) throw new DOMException(`${name} not found`, 'NotFoundError');
    if (!(c instanceof FakeFile)) throw new DOMException(`${name} is a directory`, 'TypeMismatchError');
    const file = c;
    return {
      kind: 'file' as const,
      getFile: async () => snapshot(file),
      createWritable: async () => {
        const chunks: Uint8Array[] = [];
        file.writers++;
        return {
          write: async (d: Uint8Array) => void chunks.push(d.slice()),
          // The swap file replaces the file only here.
          close: async () => {
            file.bytes = concat(chunks);
            file.lastModified++;
            file.writers--;
          },
          abort: async () => void file.writers--,
        };
      },
    };
  }

  async removeEntry(name: string, o?: { recursive?: boolean }): Promise<void> {
    const c = this.children.get(name);
    if (c === undefined) throw new DOMException(`${name} not found`, 'NotFoundError');
    if (c instanceof FakeDir && c.children.size > 0 && !o?.recursive) throw new DOMException('not empty', 'InvalidModificationError');
    if (busy(c)) throw new DOMException(`${name} is being written`, 'NoModificationAllowedError');
    this.children.delete(name);
  }

  async *entries(): AsyncIterable<[string, { kind: string; getFile?: () => Promise<ReturnType<typeof snapshot>> }]> {
    for (const [name, c] of this.children) {
      yield [name, c instanceof FakeDir ? c : { kind: 'file', getFile: async () => snapshot(c) }];
    }
  }
}

function busy(c: FakeDir | FakeFile): boolean {
  return c instanceof FakeFile ? c.writers > 0 : [...c.children.values()].some(busy);
}

function snapshot(f: FakeFile) {
  const bytes = f.bytes;
  return {
    size: bytes.byteLength,
    lastModified: f.lastModified,
    slice: (a: number, b: number) => ({ arrayBuffer: async () => bytes.slice(a, b).buffer }),
    text: async () => new TextDecoder().decode(bytes),
  };
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

function stubOpfs(root = new FakeDir(), estimate = { usage: 0, quota: 2 ** 30 }) {
  vi.stubGlobal('navigator', { storage: { getDirectory: async () => root, estimate: async () => estimate } });
  return root;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

const build = {
  bytes: new Uint8Array([8, 1, 2, 3]),
  externalData: [
    { path: 'initializer_0.bin', data: new Uint8Array(3000).fill(7) },
    { path: 'initializer_1.bin', data: new Uint8Array(5).fill(9) },
  ],
  quantized: true,
  computeDtype: 'float32' as const,
};

describe('openPageCache (OPFS)', () => {
  it('stores an entry as model.onnx, data.bin and manifest.json in its folder, and reads it back', async () => {
    const root = stubOpfs();
    const cache = (await openPageCache(undefined, { logger: () => {} }))!;
    expect(cache.store.name).toBe('OPFS vlmkit/');
    expect(await cache.put('ab12', 'm-vision', 'https://x/', build)).toBe(true);
    const folder = await (await root.getDirectoryHandle('vlmkit')).getDirectoryHandle('ab12');
    expect([...folder.children.keys()]).toEqual(['model.onnx', 'data.bin', 'manifest.json']);
    expect((folder.children.get('data.bin') as FakeFile).bytes.byteLength).toBe(3005);
    const hit = (await cache.get('ab12'))!;
    expect([...hit.bytes]).toEqual([8, 1, 2, 3]);
    expect(hit.externalData.map((b) => [b.path, b.data.byteLength, b.data[0]])).toEqual([
      ['initializer_0.bin', 3000, 7],
      ['initializer_1.bin', 5, 9],
    ]);
    expect([hit.quantized, hit.computeDtype]).toEqual([true, 'float32']);
    expect(await cache.store.list()).toEqual(['ab12']);
  });

  it('removes the manifest first: an entry whose files cannot be removed is left unfinished, never served', async () => {
    const root = stubOpfs();
    const cache = (await openPageCache('opfs:other', { logger: () => {} }))!;
    await cache.put('cd34', 'm', 'x', build);
    const folder = await (await root.getDirectoryHandle('other')).getDirectoryHandle('cd34');
    (folder.children.get('data.bin') as FakeFile).writers++; // another tab writing it
    await expect(cache.store.delete('cd34')).rejects.toThrow(/being written/);
    expect(folder.children.has('manifest.json')).toBe(false);
    expect(await cache.get('cd34')).toBeUndefined();
  });

  it("is off with cacheDir 'none', absent without OPFS or createWritable, refused for a path in a page", async () => {
    expect(await openPageCache('none', {})).toBeUndefined();
    // Node: no navigator.storage, nothing cached and nothing said.
    const logged: string[] = [];
    expect(await openPageCache(undefined, { logger: (m) => logged.push(m) })).toBeUndefined();
    expect(logged).toEqual([]);
    stubOpfs();
    for (const bad of ['/home/me/.cache/vlmkit', 'opfs:..', 'opfs:a/b']) {
      const err = await openPageCache(bad, {}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelError);
      expect(err).toMatchObject({ code: 'BAD_LOAD_OPTIONS', message: expect.stringMatching(/'opfs:<folder>' .* or 'none'/) });
    }
    // A browser whose OPFS files have no createWritable: no cache, said once.
    const root = new FakeDir();
    const getFileHandle = root.getFileHandle.bind(root);
    root.getDirectoryHandle = async () => {
      const d = new FakeDir();
      d.getFileHandle = async (n: string, o?: { create?: boolean }) => ({
        ...(await getFileHandle(n, o)),
        createWritable: undefined as never,
      });
      return d;
    };
    stubOpfs(root);
    expect(await openPageCache(undefined, { logger: (m) => logged.push(m) })).toBeUndefined();
    expect(logged).toEqual([expect.stringMatching(/no graph cache: this browser cannot write OPFS files from a page/)]);
  });
});
