// The browser side of #platform: what a bundle reaches from index.ts has no Node built-in, onnxruntime-node or
// other native addon, Node global or Node-only module; what only Node can do is refused by name.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { browserReach, sourceFiles, valueImports } from '../../../platform-check.shared.js';
import * as browser from './platform.browser.js';
import * as node from './platform.node.js';

const src = dirname(fileURLToPath(import.meta.url));

describe('browser entry', () => {
  it('reaches no Node built-in, native addon, Node global or *.node.ts module from index.ts', () => {
    const reach = browserReach(src, join(src, 'index.ts'), ['onnxruntime-node', 'sharp', 'tokenizers', 'node-av']);
    expect(reach.problems).toEqual([]);
    expect(reach.files).toEqual(
      expect.arrayContaining(['session.ts', 'web-session.ts', 'tensor.ts', 'kv-cache.ts', 'platform.browser.ts']),
    );
    // And it sees what it looks for: Node's platform module is refused on every count.
    const nodeSide = browserReach(src, join(src, 'platform.node.ts'), ['onnxruntime-node']).problems;
    expect(nodeSide).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/platform\.node\.ts: imports 'onnxruntime-node'/),
        expect.stringMatching(/cuda\.node\.ts: a Node-only module/),
        expect.stringMatching(/Node built-in 'node:child_process'/),
        expect.stringMatching(/uses a Node global \(process\.\)/),
      ]),
    );
  });

  it('imports node: and onnxruntime-node only in platform.node.ts and *.node.ts', () => {
    const offenders = sourceFiles(src)
      .filter((f) => !/\.node\.ts$/.test(f))
      .flatMap((f) => valueImports(readFileSync(f, 'utf8')).map((spec) => [f.slice(src.length + 1), spec]))
      .filter(([, spec]) => spec!.startsWith('node:') || spec === 'onnxruntime-node');
    expect(offenders).toEqual([]);
  });
});

describe('browser platform', () => {
  it('refuses the Node-only device and placement helpers with UNSUPPORTED_PLATFORM', async () => {
    for (const f of [
      browser.findCudaBinaries,
      browser.probeNvidiaGpu,
      browser.ortBindingDir,
      browser.systemLibraryLookup,
    ] as (() => unknown)[]) {
      expect(f).toThrow(
        expect.objectContaining({
          code: 'UNSUPPORTED_PLATFORM',
          message: expect.stringMatching(/in the browser sessions run on WebGPU or WASM/),
        }),
      );
    }
    await expect(browser.nodePlacement('m.onnx', { device: 'cpu' })).rejects.toMatchObject({ code: 'UNSUPPORTED_PLATFORM' });
  });

  it('reads VLMKIT_LOG from globalThis in the page, from the environment in Node', () => {
    const g = globalThis as { VLMKIT_LOG?: string };
    expect(browser.logSetting()).toBeUndefined();
    g.VLMKIT_LOG = 'runtime';
    try {
      expect(browser.logSetting()).toBe('runtime');
    } finally {
      delete g.VLMKIT_LOG;
    }
    expect(node.logSetting()).toBe(process.env.VLMKIT_LOG);
  });

  it("builds feeds with its own onnxruntime's Tensor class", () => {
    expect(browser.Tensor).not.toBe(node.Tensor);
    expect(browser.sessionBackend.Tensor).toBe(browser.Tensor);
    expect(node.sessionBackend.Tensor).toBe(node.Tensor);
  });
});
