import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, expect, it, vi } from 'vitest';
import { affineModel } from './test-utils/onnx-models.js';

const here = dirname(fileURLToPath(import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'vlmkit-readme-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The ```ts block that follows the "example:" marker in README.md. */
function readmeExample(): string {
  const readme = readFileSync(join(here, '..', 'README.md'), 'utf8');
  const m = /<!-- example:[^>]*-->\s*```ts\n([\s\S]*?)```/.exec(readme);
  if (!m?.[1]) throw new Error('README.md has no example block');
  return m[1];
}

it('the README example runs as written and prints what it says', async () => {
  const code = readmeExample().replace("'@vlmkit/runtime'", JSON.stringify(join(here, 'index.ts')));
  writeFileSync(join(tmp, 'model.onnx'), affineModel());
  const file = join(tmp, 'example.ts');
  writeFileSync(file, code);
  const calls: unknown[][] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void calls.push(args));
  const cwd = process.cwd();
  process.chdir(tmp); // the example loads 'model.onnx' from the working directory
  try {
    await import(pathToFileURL(file).href);
  } finally {
    process.chdir(cwd);
    log.mockRestore();
  }
  expect(calls).toHaveLength(2);
  expect(calls[0]?.[0]).toMatch(/^affine runs on (cpu|cuda): auto: /);
  expect(calls[1]).toEqual([[1, 4], Float32Array.from([1, 3, 5, 7])]);
});
