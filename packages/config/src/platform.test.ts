// The browser build of this package must not reach Node: what a bundle reaches from index.ts has no Node
// built-in, native addon, Node global or Node-only module (the check every browser-safe package runs).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { browserReach, sourceFiles } from '../../../platform-check.shared.js';

const src = dirname(fileURLToPath(import.meta.url));

it('reaches no Node built-in, native addon, Node global or *.node.ts module from index.ts', () => {
  const reach = browserReach(src, join(src, 'index.ts'), ['onnxruntime-node', 'sharp', 'tokenizers', 'node-av']);
  expect(reach.problems).toEqual([]);
  // Every source is reached from the entry, so the walk covers the package.
  expect(reach.files.length).toBe(sourceFiles(src).length);
});
