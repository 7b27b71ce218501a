// The browser side of #platform: what a bundle reaches from index.ts has no Node built-in, native addon or
// Node-only module; the browser's SHA-256 gives node:crypto's digests; what needs files is refused by name.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { browserReach, sourceFiles, valueImports } from '../../../platform-check.shared.js';
import { GraphError } from './errors.js';
import { Graph } from './graph.js';
import * as browser from './platform.browser.js';
import * as node from './platform.node.js';
import type { FileRead } from './read-observer.js';
import { ReadScopes } from './read-scope.js';
import { jsSha256 } from './sha256.js';

const src = dirname(fileURLToPath(import.meta.url));

describe('browser entry', () => {
  it('reaches no Node built-in, native addon, Node global or *.node.ts module from index.ts', () => {
    const reach = browserReach(src, join(src, 'index.ts'), ['onnxruntime-node', 'sharp', 'tokenizers', 'node-av']);
    expect(reach.problems).toEqual([]);
    // The walk did follow the package: the builder, the serializer and the browser platform are in it.
    expect(reach.files).toEqual(expect.arrayContaining(['graph.ts', 'model.ts', 'tensor-bytes.ts', 'platform.browser.ts']));
    // And it sees what it looks for: Node's platform module is refused.
    const nodeSide = browserReach(src, join(src, 'platform.node.ts'), []);
    expect(nodeSide.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/Node built-in 'node:crypto'/),
        expect.stringMatching(/save-model\.node\.ts: a Node-only module/),
      ]),
    );
  });

  it('imports node: and onnxruntime-node only in platform.node.ts and *.node.ts', () => {
    const offenders = sourceFiles(src)
      .filter((f) => !/(^|\/)platform\.node\.ts$|\.node\.ts$/.test(f))
      .flatMap((f) => valueImports(readFileSync(f, 'utf8')).map((spec) => [f.slice(src.length + 1), spec]))
      .filter(([, spec]) => spec!.startsWith('node:') || spec === 'onnxruntime-node');
    expect(offenders).toEqual([]);
  });
});

describe('createSha256', () => {
  it("gives node:crypto's hex digest for the same bytes, whole or in pieces, strings as UTF-8", () => {
    const lengths = [0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096 + 17, 1 << 20];
    for (const n of lengths) {
      const data = new Uint8Array(randomBytes(n));
      const want = createHash('sha256').update(data).digest('hex');
      expect(jsSha256().update(data).hex(), `length ${n}`).toBe(want);
      expect(browser.createSha256().update(data).hex()).toBe(want);
      expect(node.createSha256().update(data).hex()).toBe(want);
      // Split at random points, some pieces empty.
      const js = jsSha256();
      let at = 0;
      while (at < n) {
        const piece = Math.floor(Math.random() * 150);
        js.update(data.subarray(at, at + piece));
        at += piece;
      }
      expect(js.hex(), `length ${n} in pieces`).toBe(want);
    }
    const text = `{"name":"décodeur","shape":[3,4]} 漢字 🙂 ${'x'.repeat(200)}`;
    const mixed = (h: ReturnType<typeof jsSha256>) =>
      h
        .update(text)
        .update(new Uint8Array([0, 255]))
        .update('')
        .hex();
    const want = createHash('sha256')
      .update(text)
      .update(new Uint8Array([0, 255]))
      .update('')
      .digest('hex');
    expect(mixed(jsSha256())).toBe(want);
    expect(mixed(node.createSha256())).toBe(want);
  });

  it('refuses an update after the digest', () => {
    const h = jsSha256().update('a');
    h.hex();
    expect(() => h.update('b')).toThrow(/after hex/);
  });
});

describe('browser platform', () => {
  it('refuses what needs a file system with UNSUPPORTED_PLATFORM and says what to use', async () => {
    const g = new Graph();
    g.output(g.input('x', 'float32', [1]), 'y');
    const save = browser.saveModel(g, 'm.onnx');
    await expect(save).rejects.toThrow(GraphError);
    await expect(save).rejects.toMatchObject({ code: 'UNSUPPORTED_PLATFORM', message: expect.stringMatching(/serializeModel/) });
    await expect(browser.loadModelProto('m.onnx')).rejects.toMatchObject({ code: 'UNSUPPORTED_PLATFORM' });
    await expect(browser.readFileRange('/ckpt/model.safetensors', 8, 16)).rejects.toMatchObject({
      code: 'UNSUPPORTED_PLATFORM',
      message: expect.stringMatching(/tensorFromSource/),
    });
  });

  it('reports reads to the newest observer in progress; one that ended no longer hears', async () => {
    const scopes = new ReadScopes();
    const a: FileRead[] = [];
    const b: FileRead[] = [];
    const read = (path: string): FileRead => ({ path, byteOffset: 0, byteLength: 1 });
    scopes.report(read('outside'));
    let releaseB!: () => void;
    const bDone = new Promise<void>((r) => {
      releaseB = r;
    });
    await scopes.observe(
      (r) => a.push(r),
      async () => {
        scopes.report(read('a1'));
        const inner = scopes.observe(
          (r) => b.push(r),
          async () => {
            scopes.report(read('b1'));
            await bDone;
          },
        );
        // Overlapping: while b runs, a's own read goes to b (the documented limit).
        scopes.report(read('a2'));
        releaseB();
        await inner;
        scopes.report(read('a3'));
      },
    );
    scopes.report(read('outside'));
    expect(a.map((r) => r.path)).toEqual(['a1', 'a3']);
    expect(b.map((r) => r.path)).toEqual(['b1', 'a2']);
  });

  it('removes an observer whose work failed', async () => {
    const scopes = new ReadScopes();
    const seen: string[] = [];
    await expect(
      scopes.observe(
        () => seen.push('x'),
        async () => {
          throw new Error('boom');
        },
      ),
    ).rejects.toThrow('boom');
    scopes.report({ path: 'later', byteOffset: 0, byteLength: 1 });
    expect(seen).toEqual([]);
  });
});
