// The browser build of this package must not reach Node: every `node:` import (and every Node built-in,
// Buffer and process) of its source sits in platform.node.ts or a *.node.ts module that only *.node.ts
// modules import (the `#platform` rule: a page gets platform.browser.ts instead). Type-only imports are
// erased by the compiler, so they do not count.
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('.', import.meta.url));
const sources = (readdirSync(SRC, { recursive: true }) as string[])
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.split(/[\\/]/).includes('test-utils'))
  .map((file) => ({ file, text: readFileSync(join(SRC, file), 'utf8') }));
const platformFree = sources.filter((s) => !s.file.endsWith('.node.ts'));
const builtin = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
/** The modules a file imports at run time: `import type` / `export type` statements dropped. */
const runtimeImports = (text: string) =>
  [...text.replaceAll(/(?:import|export) type [^;]*;/g, '').matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]!);

it('no source outside platform.node.ts / *.node.ts imports a Node built-in or uses Buffer or process', () => {
  expect(platformFree.length).toBeGreaterThan(3);
  const found = platformFree.flatMap((s) => [
    ...runtimeImports(s.text)
      .filter((m) => builtin.has(m))
      .map((m) => `${s.file} imports ${m}`),
    ...[...s.text.matchAll(/\b(?:Buffer|process)\.\w+/g)].map((m) => `${s.file} uses ${m[0]}`),
  ]);
  expect(found).toEqual([]);
});

it('*.node.ts modules are imported only by *.node.ts modules (platform.node.ts among them)', () => {
  const found = platformFree.flatMap((s) =>
    runtimeImports(s.text)
      .filter((m) => m.endsWith('.node.js'))
      .map((m) => `${s.file} imports ${m}`),
  );
  expect(found).toEqual([]);
});

it('in the browser every path API refuses with UNSUPPORTED_PLATFORM and names what to use instead', async () => {
  const browser = await import('./platform.browser.js');
  const node = await import('./platform.node.js');
  expect(Object.keys(browser).sort()).toEqual(Object.keys(node).sort());
  for (const [name, f] of Object.entries(browser) as [string, (...args: unknown[]) => unknown][]) {
    let err: unknown;
    try {
      await f('/some/path', {});
    } catch (e) {
      err = e;
    }
    expect((err as { code?: string }).code, name).toBe('UNSUPPORTED_PLATFORM');
    expect((err as Error).message, name).toMatch(/reads the file system, which a browser has not; use \w+/);
  }
});
