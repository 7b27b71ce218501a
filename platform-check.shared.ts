// The browser-build check every browser-safe package's tests run (one copy, beside vitest.shared.ts): what a
// bundle of the package would reach: the modules imported (type-only imports left out, as a bundler drops
// them) from the entry, with #platform resolved to platform.browser.ts, and what each uses that a page does not
// have (node: modules and other built-ins, native addons, Node globals).
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';

const SPECIFIER =
  /^\s*(import|export)\s+(type\s+)?[^'";]*?from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;
const NODE_GLOBALS = /\b(process\.|Buffer\.|__dirname|__filename|require\()/;

function stripComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** The value imports of a module's source (type-only ones left out). */
export function valueImports(source: string): string[] {
  const out: string[] = [];
  for (const m of stripComments(source).matchAll(SPECIFIER)) {
    if (m[2] !== undefined) continue;
    out.push((m[3] ?? m[4] ?? m[5])!);
  }
  return out;
}

export interface BrowserReach {
  files: string[];
  problems: string[];
}

/** Walks the value imports from `entry` (absolute), `#platform` being `src/platform.browser.ts`. */
export function browserReach(srcDir: string, entry: string, forbiddenPackages: readonly string[]): BrowserReach {
  const builtins = new Set(builtinModules);
  const seen = new Set<string>();
  const problems: string[] = [];
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const name = relative(srcDir, file);
    if (/\.node\.ts$/.test(file)) problems.push(`${name}: a Node-only module is reached`);
    const source = readFileSync(file, 'utf8');
    const global = NODE_GLOBALS.exec(stripComments(source));
    if (global) problems.push(`${name}: uses a Node global (${global[1]})`);
    for (const spec of valueImports(source)) {
      if (spec === '#platform') visit(join(srcDir, 'platform.browser.ts'));
      else if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      else if (spec.startsWith('node:') || builtins.has(spec)) problems.push(`${name}: imports the Node built-in '${spec}'`);
      else if (forbiddenPackages.includes(spec)) problems.push(`${name}: imports '${spec}'`);
    }
  };
  visit(entry);
  return { files: [...seen].map((f) => relative(srcDir, f)).sort(), problems };
}

/** The package's non-test sources under `dir` (absolute paths; test-utils/ left out). */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    if (d.isDirectory()) return d.name === 'test-utils' ? [] : sourceFiles(join(dir, d.name));
    return d.name.endsWith('.ts') && !d.name.endsWith('.test.ts') ? [join(dir, d.name)] : [];
  });
}
