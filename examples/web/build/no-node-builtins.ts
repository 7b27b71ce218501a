import { builtinModules } from 'node:module';
import { relative } from 'node:path';
import type { Plugin } from 'vite';

/** Packages with native code: they cannot run in a page, whatever a bundler does with them. */
export const NATIVE_ADDONS: readonly string[] = ['onnxruntime-node', 'sharp', 'tokenizers', 'node-av'];

const BUILTINS = new Set(builtinModules);

/** Why `source` cannot be in a browser bundle, or undefined when it can. */
export function nodeOnlyReason(source: string): string | undefined {
  if (source.startsWith('node:')) return 'a Node built-in';
  if (BUILTINS.has(source)) return `a Node built-in ('node:${source}')`;
  const pkg = source.startsWith('@') ? source.split('/').slice(0, 2).join('/') : source.split('/')[0]!;
  if (NATIVE_ADDONS.includes(pkg)) return 'a native addon';
  return undefined;
}

/**
 * Fails the build when anything in the page's module graph imports a Node built-in (`node:fs`, or a bare
 * `fs`) or a native addon. Vite would otherwise swap a built-in for an empty stub with a warning and the page
 * would break at run time, far from the import. Every offender is listed with the module that imports it,
 * which names the package whose browser entry (`#platform`) let it through.
 */
export function noNodeBuiltins(root: string): Plugin {
  const offenders = new Set<string>();
  return {
    name: 'vlmkit:no-node-builtins',
    apply: 'build',
    enforce: 'pre',
    buildStart() {
      offenders.clear();
    },
    resolveId(source, importer) {
      const reason = nodeOnlyReason(source);
      if (reason === undefined) return null;
      offenders.add(`'${source}' (${reason}) imported by ${importer ? relative(root, importer) : '(entry)'}`);
      // Kept out of the bundle so that the build goes on and reports every offender at once.
      return { id: source, external: true };
    },
    buildEnd() {
      if (offenders.size === 0) return;
      this.error(
        `the browser bundle must not import Node built-ins or native addons; found ${offenders.size}:\n  ` +
          [...offenders].sort().join('\n  ') +
          "\nMove them behind the package's '#platform' import (platform.node.ts), with a browser implementation.",
      );
    },
  };
}
