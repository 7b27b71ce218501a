// The browser build must not reach Node: every `node:` import, native addon and Node global of this
// package's source sits in platform.node.ts or a *.node.ts module (only platform.node.ts imports those).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname);
const NODE_ONLY =
  /from '(node:[^']+|sharp|tokenizers|node-av)'|import\('(node:[^']+|sharp|tokenizers|node-av)'\)|\bprocess\.|\bBuffer\b|NodeJS\./;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'test-utils' ? [] : sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

const isNodeFile = (f: string) => f.endsWith('.node.ts');
const files = sources(SRC).map((f) => relative(SRC, f));

describe('platform split', () => {
  it.each(files.filter((f) => !isNodeFile(f)))('%s uses nothing of Node', (f) => {
    const lines = readFileSync(join(SRC, f), 'utf8').split('\n');
    expect(lines.filter((l) => NODE_ONLY.test(l) && !l.trimStart().startsWith('//') && !l.trimStart().startsWith('*'))).toEqual([]);
  });

  it.each(files.filter((f) => !isNodeFile(f)))('%s imports no *.node.ts module (types aside)', (f) => {
    const lines = readFileSync(join(SRC, f), 'utf8').split('\n');
    expect(lines.filter((l) => /from '[^']*\.node\.js'/.test(l) && !l.startsWith('import type '))).toEqual([]);
  });

  it('finds the Node-only modules it exempts, and the check would catch one', () => {
    expect(files.filter(isNodeFile).sort()).toEqual(
      expect.arrayContaining(['platform.node.ts', 'text/tokenizer-rust.node.ts', 'image/decode.node.ts', 'video/decode.node.ts']),
    );
    expect(NODE_ONLY.test("import sharp from 'sharp';")).toBe(true);
    expect(NODE_ONLY.test("import { join } from 'node:path';")).toBe(true);
  });
});
