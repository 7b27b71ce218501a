// Prints the node_modules/.pnpm entries the built workspace packages need at run time (their production
// dependencies, transitively), one per line, for tools/gpu/pack.sh.
// usage: node tools/gpu/deps.mjs ROOT PACKAGE_DIR...
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';

const [root, ...starts] = process.argv.slice(2);
const pnpm = realpathSync(join(root, 'node_modules', '.pnpm')) + sep;
const entries = new Set();
const seen = new Set();

/** Node's lookup: <dir>/node_modules/<name>, then each parent's. */
function locate(fromDir, name) {
  for (let d = fromDir; ; d = dirname(d)) {
    const candidate = join(d, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dirname(d) === d) throw new Error(`${name} not found from ${fromDir}`);
  }
}

function walk(dir) {
  if (seen.has(dir)) return;
  seen.add(dir);
  if (dir.startsWith(pnpm)) entries.add(`node_modules/.pnpm/${relative(pnpm, dir).split(sep)[0]}`);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  for (const name of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) {
    // onnxruntime-node needs only onnxruntime-common at run time: adm-zip and global-agent serve its install script.
    if (pkg.name === 'onnxruntime-node' && name !== 'onnxruntime-common') continue;
    try {
      walk(locate(dir, name));
    } catch (e) {
      if (!(pkg.optionalDependencies && name in pkg.optionalDependencies)) throw e;
    }
  }
}

for (const s of starts) walk(realpathSync(s));
console.log([...entries].sort().join('\n'));
