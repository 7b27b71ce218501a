import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FIXTURE_DIR } from '@vlmkit/models';
import { afterAll, expect, it, vi } from 'vitest';

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

it('the README example serves a request and prints what it says', async () => {
  const code = readmeExample()
    .replace("'@vlmkit/server'", JSON.stringify(join(here, 'index.ts')))
    .replace("'@vlmkit/models'", JSON.stringify(join(here, '..', '..', 'models', 'src', 'index.ts')))
    .replace("'test-fixtures/ernie-tiny'", JSON.stringify(join(FIXTURE_DIR, 'ernie-tiny')));
  const file = join(tmp, 'example.ts');
  writeFileSync(file, code);
  const calls: unknown[][] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void calls.push(args));
  try {
    await import(pathToFileURL(file).href);
  } finally {
    log.mockRestore();
  }
  expect(calls).toEqual([['length', 8]]);
});
