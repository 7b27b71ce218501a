import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, expect, it, vi } from 'vitest';
import { affineModel } from './test-utils/onnx-models.js';

const here = dirname(fileURLToPath(import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'vlmkit-readme-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The ```ts block that follows the "example:" (or "browser example:") marker in README.md. */
function readmeExample(marker = 'example'): string {
  const readme = readFileSync(join(here, '..', 'README.md'), 'utf8');
  const m = new RegExp(`<!-- ${marker}:[^>]*-->\\s*\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(readme);
  if (!m?.[1]) throw new Error(`README.md has no ${marker} block`);
  return m[1];
}

async function runExample(code: string, cwd: string): Promise<unknown[][]> {
  const file = join(tmp, `example-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(file, code);
  const calls: unknown[][] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void calls.push(args));
  const was = process.cwd();
  process.chdir(cwd);
  try {
    await import(pathToFileURL(file).href);
  } finally {
    process.chdir(was);
    log.mockRestore();
  }
  return calls;
}

it('the README example runs as written and prints what it says', async () => {
  const code = readmeExample().replace("'@vlmkit/runtime'", JSON.stringify(join(here, 'index.ts')));
  writeFileSync(join(tmp, 'model.onnx'), affineModel());
  // The example loads 'model.onnx' from the working directory.
  const calls = await runExample(code, tmp);
  expect(calls).toHaveLength(2);
  expect(calls[0]?.[0]).toMatch(/^affine runs on (cpu|cuda): auto: /);
  expect(calls[1]).toEqual([[1, 4], Float32Array.from([1, 3, 5, 7])]);
});

it('the browser example runs on onnxruntime-web as written: softmax(x @ w) of its numbers', async () => {
  const code = readmeExample('browser example')
    .replace("'@vlmkit/onnx-graph'", JSON.stringify(join(here, 'test-utils', 'onnx-graph.ts')))
    .replace("'@vlmkit/runtime'", JSON.stringify(join(here, 'test-utils', 'browser-runtime.ts')));
  const calls = await runExample(code, tmp);
  expect(calls).toHaveLength(2);
  expect(calls[0]?.[0]).toMatch(/^softmax runs on wasm: auto: navigator\.gpu is undefined .*; WASM, /);
  // The example's w [4, 3] and x [1, 4], softmax of their product in plain TypeScript.
  const w = [1, 0, -1, 0.5, 2, 0, 0, -1, 1, 0.25, 0.5, 0.75];
  const x = [1, 2, 3, 4];
  const logits = [0, 1, 2].map((j) => x.reduce((a, v, i) => a + v * w[i * 3 + j]!, 0));
  const e = logits.map((l) => Math.exp(l - Math.max(...logits)));
  const want = e.map((v) => v / e.reduce((a, b) => a + b, 0));
  expect(calls[1]?.[0]).toEqual([1, 3]);
  const got = Array.from(calls[1]?.[1] as Float32Array);
  for (const [j, v] of got.entries()) expect(Math.abs(v - want[j]!)).toBeLessThanOrEqual(1e-6);
  expect(Math.max(...want) - Math.min(...want)).toBeGreaterThan(0.1);
});
