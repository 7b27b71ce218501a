/** Runs the README example verbatim (only the package import is pointed at src/) and checks what it prints. */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { inspect } from 'node:util';
import { afterEach, expect, it, vi } from 'vitest';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const example = /<!-- example:start[^>]*-->\s*```ts\n([\s\S]*?)```\s*<!-- example:end -->/.exec(readme)?.[1];

afterEach(() => vi.restoreAllMocks());

it('the README example runs and prints what its comments say', async () => {
  expect(example).toBeDefined();
  const index = fileURLToPath(new URL('./index.ts', import.meta.url));
  const code = example!.replace("from '@vlmkit/safetensors'", `from ${JSON.stringify(index)}`);
  expect(code).not.toBe(example);
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-readme-'));
  const printed: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    printed.push(args.map((a) => (typeof a === 'string' ? a : inspect(a))).join(' '));
  });
  try {
    await writeFile(join(dir, 'example.ts'), code);
    await import(pathToFileURL(join(dir, 'example.ts')).href);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const promised = [...example!.matchAll(/console\.log\(.*\); \/\/ (.*)$/gm)].map((m) => m[1]);
  expect(promised).toHaveLength(4);
  expect(printed).toEqual(promised);
});

it('the README error table lists exactly the error codes', async () => {
  const { ERROR_CODES } = await import('./errors.js');
  const documented = [...readme.matchAll(/^\| `([A-Z_0-9]+)` \|/gm)].map((m) => m[1]);
  expect(documented).toEqual([...ERROR_CODES]);
});
