import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, expect, it, vi } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'vlmkit-moe-decoder-readme-'));
// The example file sits in the package (so its bare imports resolve); its outputs go to `tmp`.
const file = join(here, '..', '..', '.readme-example.tmp.ts');
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
  rmSync(file, { force: true });
});

/** The ```ts block that follows the "example:" marker in README.md. */
function readmeExample(): string {
  const m = /<!-- example:[^>]*-->\s*```ts\n([\s\S]*?)```/.exec(readFileSync(join(here, '..', '..', 'README.md'), 'utf8'));
  if (!m?.[1]) throw new Error('README.md has no example block');
  return m[1];
}

it('the README example runs as written and prints the shapes it says', async () => {
  writeFileSync(file, readmeExample().replace("'@vlmkit/moe-decoder'", JSON.stringify('./src/index.js')));
  const calls: unknown[][] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void calls.push(args));
  const cwd = process.cwd();
  process.chdir(tmp);
  try {
    await import(pathToFileURL(file).href);
  } finally {
    process.chdir(cwd);
    log.mockRestore();
  }
  expect(calls).toEqual([[[1, 3, 256]], [[1, 2, 3, 16]]]);
});
