// Node module hooks that let a plain `node` child process import this repo's TypeScript sources, as vitest
// does: `.ts` files are transpiled (types stripped, TypeScript's transpileModule; outputs kept by content hash
// in the temp directory, so that many children transpile each file once), and the `.js` specifiers the
// sources use resolve to their `.ts` files. Workspace packages resolve to their sources through the
// `@vlmkit/source` export condition (`node --conditions=@vlmkit/source`). For tests that need real
// processes (concurrent loads into one cache), not worker threads.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CACHE = join(tmpdir(), 'vlmkit-ts-hooks');

export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (e) {
    if (specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) return next(`${specifier.slice(0, -3)}.ts`, context);
    throw e;
  }
}

export async function load(url, context, next) {
  if (!url.endsWith('.ts')) return next(url, context);
  const path = fileURLToPath(url);
  const text = await readFile(path, 'utf8');
  const cached = join(CACHE, `${createHash('sha256').update(path).update('\0').update(text).digest('hex')}.js`);
  let source = await readFile(cached, 'utf8').catch(() => undefined);
  if (source === undefined) {
    const { default: ts } = await import('typescript');
    source = ts.transpileModule(text, {
      fileName: path,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    }).outputText;
    await mkdir(CACHE, { recursive: true });
    const tmp = `${cached}.${process.pid}`;
    await writeFile(tmp, source);
    await rename(tmp, cached);
  }
  return { format: 'module', source, shortCircuit: true };
}
