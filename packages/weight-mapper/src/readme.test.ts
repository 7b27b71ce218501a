/** Runs the README example verbatim (imports pointed at the sources, the fixture path made absolute) and checks what it prints. */
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { inspect } from 'node:util';
import { afterEach, expect, it, vi } from 'vitest';
import { MAPPING_ERROR_CODES } from './errors.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const example = /<!-- example:start -->\s*```ts\n([\s\S]*?)```\s*<!-- example:end -->/.exec(readme)?.[1];

afterEach(() => vi.restoreAllMocks());

it('the README example runs and prints what its comments say', async () => {
  expect(example).toBeDefined();
  const fixture = fileURLToPath(new URL('../../../test-fixtures/ernie-tiny', import.meta.url));
  const code = example!
    .replace("from '@vlmkit/weight-mapper'", `from ${JSON.stringify(fileURLToPath(new URL('./index.ts', import.meta.url)))}`)
    .replace("'test-fixtures/ernie-tiny'", JSON.stringify(fixture));
  const printed: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    printed.push(args.map((a) => (typeof a === 'string' ? a : inspect(a))).join(' '));
  });
  // Inside the package, so that its workspace imports resolve.
  const file = fileURLToPath(new URL(`./.readme-example-${process.pid}.ts`, import.meta.url));
  try {
    await writeFile(file, code);
    await import(pathToFileURL(file).href);
  } finally {
    await rm(file, { force: true });
  }
  const comments = [...example!.matchAll(/console\.log\(.*\); \/\/ (.*)$/gm)].map((m) => m[1]);
  expect(printed.slice(0, comments.length)).toEqual(comments);
  expect(printed[comments.length]).toBe(
    `my-model mapping of ${fixture}: 2 parameters (2 computed at save time), 4 checkpoint tensors consumed, 0 ignored, 157 unmapped, 0 parameters missing, 0 mismatched.`,
  );
});

it('the README error table lists exactly the error codes', () => {
  const documented = [...readme.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]);
  expect(documented).toEqual([...MAPPING_ERROR_CODES]);
});
