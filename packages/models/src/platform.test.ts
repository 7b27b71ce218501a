// The browser entry's rule (package.json "imports" `#platform`): a browser build resolves every module the
// package's index reaches, so Node (node: modules, native addons, the process and Buffer globals) is used only
// in ./platform.node.ts and the `*.node.ts` modules under it; the rest imports them, if at all, for types.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('.', import.meta.url));
const NATIVE = ['onnxruntime-node', 'sharp', 'tokenizers', 'node-av'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const path = join(dir, d.name);
    if (d.isDirectory()) return d.name === 'test-utils' ? [] : sources(path);
    return d.name.endsWith('.ts') && !d.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The code without its comments (a doc comment may show `process.stdout.write`). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** What in a platform-free module's code needs Node: one line per finding. */
function nodeUses(text: string): string[] {
  const found: string[] = [];
  const c = code(text);
  const imports = /\b(?:import|export)(\s+type)?\b[^;'"]*?\bfrom\s+'([^']+)'|\b(?:import|require)\s*\(?\s*'([^']+)'/g;
  for (const m of c.matchAll(imports)) {
    const spec = (m[2] ?? m[3])!;
    if (spec.startsWith('node:')) found.push(`imports ${spec}`);
    else if (NATIVE.includes(spec)) found.push(`imports the native ${spec}`);
    else if (spec.endsWith('.node.js') && m[1] === undefined) found.push(`imports ${spec} for its values`);
  }
  for (const g of ['process', 'Buffer']) if (new RegExp(`\\b${g}\\.`).test(c)) found.push(`uses the Node global ${g}`);
  return found;
}

describe('the browser entry', () => {
  it('finds Node in a module (the check can fail)', () => {
    expect(nodeUses("import { join } from 'node:path';")).toEqual(['imports node:path']);
    expect(nodeUses("import { x } from './cache-files.node.js';\nprocess.exit(1);")).toEqual([
      'imports ./cache-files.node.js for its values',
      'uses the Node global process',
    ]);
    expect(nodeUses("import('node:fs');\nimport sharp from 'sharp';")).toEqual(['imports node:fs', 'imports the native sharp']);
    expect(nodeUses("import type {\n  X,\n} from './graph-cache.node.js';\n// process.exit(1)\nconst ort = 'onnxruntime-node';")).toEqual(
      [],
    );
  });

  it('has Node only in platform.node.ts and *.node.ts', () => {
    const files = sources(SRC);
    expect(files.length).toBeGreaterThan(50);
    const pure = files.filter((f) => !f.endsWith('.node.ts'));
    const problems = pure.flatMap((f) => nodeUses(readFileSync(f, 'utf8')).map((p) => `${relative(SRC, f)}: ${p}`));
    expect(problems).toEqual([]);
  });

  it('reaches the platform through #platform only', () => {
    const direct = sources(SRC).filter((f) =>
      /from '\.{1,2}\/(?:[\w-]+\/)*platform\.(node|browser)\.js'/.test(code(readFileSync(f, 'utf8'))),
    );
    // platform.browser.ts types itself against the Node one (`import type`), which is erased.
    expect(direct.map((f) => relative(SRC, f))).toEqual(['platform.browser.ts']);
  });
});
