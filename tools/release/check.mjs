#!/usr/bin/env node
// pnpm release:check: the packages as a user gets them from the registry. Packs every public
// package as `pnpm publish` would (workspace:* replaced by versions, `files` / `exports` / `bin`
// honoured), installs the tarballs with npm into a fresh project in a temp folder, then runs the
// installed `vlmkit` on a copy of the tiny ERNIE fixture, imports every export of every package
// from a plain .mjs file and type-checks them from a .ts file. Needs `pnpm build` first;
// third-party dependencies come from the npm registry. docs/releasing.md explains the release.
//
//   node tools/release/check.mjs [--keep]    # --keep: leave the temp folder and print its path
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({ options: { keep: { type: 'boolean', default: false } } });

class StepError extends Error {}

/** Runs one named step; a failure names the step and stops the check. */
function step(name, fn) {
  const start = performance.now();
  process.stdout.write(`release:check: ${name} ... `);
  try {
    const note = fn();
    console.log(`ok (${((performance.now() - start) / 1000).toFixed(1)} s)${note ? `: ${note}` : ''}`);
  } catch (err) {
    console.log('FAILED');
    throw new StepError(`step "${name}" failed: ${err instanceof Error ? err.message : err}`);
  }
}

/** Runs a command, returns its stdout; throws with the command and its output tail when it fails. */
function run(cmd, argv, options = {}) {
  const res = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, timeout: 600_000, ...options });
  if (res.error) throw new Error(`${cmd} ${argv.join(' ')}: ${res.error.message}`);
  if (res.status !== 0) {
    const tail = `${res.stdout}\n${res.stderr}`.trim().split('\n').slice(-40).join('\n');
    throw new Error(`\`${cmd} ${argv.join(' ')}\` exited with ${res.status ?? res.signal}:\n${tail}`);
  }
  return res.stdout;
}

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));

/** Every path a package.json points into its own folder: main, types, bin, exports targets. */
function entryPaths(pkg) {
  const paths = [pkg.main, pkg.types, ...(typeof pkg.bin === 'string' ? [pkg.bin] : Object.values(pkg.bin ?? {}))];
  const walk = (node) => {
    if (typeof node === 'string') paths.push(node);
    else if (node && typeof node === 'object') for (const v of Object.values(node)) walk(v);
  };
  walk(pkg.exports);
  return paths.filter((p) => typeof p === 'string');
}

const packages = readdirSync(join(REPO, 'packages'))
  .map((name) => ({ dir: join(REPO, 'packages', name), json: readJson(join(REPO, 'packages', name, 'package.json')) }))
  .filter((p) => !p.json.private);
const LICENSE = readFileSync(join(REPO, 'LICENSE'), 'utf8');
const versions = new Map(packages.map((p) => [p.json.name, p.json.version]));

const work = mkdtempSync(join(tmpdir(), 'vlmkit-release-'));
const tarballs = join(work, 'tarballs');
const project = join(work, 'project');
let failed = false;
try {
  step('built', () => {
    const missing = packages.flatMap((p) => entryPaths(p.json).flatMap((e) => (existsSync(join(p.dir, e)) ? [] : [`${p.json.name} ${e}`])));
    if (missing.length) throw new Error(`missing ${[...new Set(missing)].join(', ')}: run \`pnpm build\` first`);
    return `${packages.length} packages`;
  });

  const exportNames = new Map();
  step('export names of the workspace build', () => {
    for (const p of packages) {
      const out = run(process.execPath, [
        '--input-type=module',
        '-e',
        `console.log(JSON.stringify(Object.keys(await import(${JSON.stringify(pathToFileURL(join(p.dir, p.json.main)).href)}))))`,
      ]);
      const keys = JSON.parse(out.trim().split('\n').at(-1));
      if (keys.length === 0) throw new Error(`${p.json.name}: its main entry exports nothing`);
      exportNames.set(p.json.name, keys);
    }
    return `${[...exportNames.values()].reduce((n, k) => n + k.length, 0)} names`;
  });

  step('pnpm pack', () => {
    mkdirSync(tarballs);
    const problems = [];
    for (const p of packages) {
      // pnpm prints the lifecycle scripts it runs (cli's prepack) before the JSON.
      const printed = run('pnpm', ['pack', '--json', '--pack-destination', tarballs], { cwd: p.dir });
      const packed = JSON.parse(printed.slice(printed.search(/^\{/m)));
      const files = packed.files.map((f) => f.path);
      const shipped = new Set(files);
      for (const e of entryPaths(p.json)) if (!shipped.has(e.replace(/^\.\//, ''))) problems.push(`${p.json.name}: ${e} not packed`);
      for (const f of files) {
        if (/(^|\/)(test-utils|__fixtures__)\/|\.test\.[cm]?[jt]s$|(^|\/)vitest\.config\./.test(f))
          problems.push(`${p.json.name}: ships ${f}`);
      }
      if (!shipped.has('README.md')) problems.push(`${p.json.name}: no README.md`);
      if (!shipped.has('LICENSE')) problems.push(`${p.json.name}: no LICENSE`);
      else if (readFileSync(join(p.dir, 'LICENSE'), 'utf8') !== LICENSE)
        problems.push(`${p.json.name}: LICENSE differs from the repository's`);
    }
    if (problems.length) throw new Error(`tarball contents (fix \`files\` in package.json):\n  ${problems.join('\n  ')}`);
    return `${readdirSync(tarballs).length} tarballs`;
  });

  step('npm install of the tarballs in a fresh project', () => {
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'release-check', private: true, type: 'module' })}\n`);
    const files = readdirSync(tarballs).map((f) => join(tarballs, f));
    // ONNXRUNTIME_NODE_INSTALL=skip: onnxruntime-node's install script would download CUDA
    // binaries; the CPU provider is in the package itself.
    run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', ...files], {
      cwd: project,
      env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
    });
    const problems = [];
    for (const p of packages) {
      const dir = join(project, 'node_modules', p.json.name);
      const installed = readJson(join(dir, 'package.json'));
      if (installed.version !== p.json.version)
        problems.push(`${p.json.name}: installed ${installed.version}, workspace ${p.json.version}`);
      for (const [dep, range] of Object.entries({ ...installed.dependencies, ...installed.peerDependencies })) {
        if (range.startsWith('workspace:')) problems.push(`${p.json.name}: dependency ${dep} is still ${range}`);
        else if (versions.has(dep) && range !== versions.get(dep))
          problems.push(`${p.json.name}: ${dep}@${range}, not the packed ${versions.get(dep)}`);
      }
      for (const e of entryPaths(installed)) if (!existsSync(join(dir, e))) problems.push(`${p.json.name}: ${e} missing after install`);
    }
    if (problems.length) throw new Error(problems.join('\n  '));
  });

  step('npx vlmkit run on a copy of test-fixtures/ernie-tiny', () => {
    cpSync(join(REPO, 'test-fixtures/ernie-tiny'), join(project, 'ernie-tiny'), { recursive: true });
    cpSync(join(REPO, 'test-fixtures/processors/images/photo.jpg'), join(project, 'photo.jpg'));
    // --no: never fetch a package called vlmkit from the registry; the installed bin must answer.
    const argv = ['--no', 'vlmkit', 'run', '--model', 'ernie-tiny', '--image', 'photo.jpg', '--prompt', 'Describe this image.'];
    const out = run('npx', [...argv, '--max-new-tokens', '4', '--cache-dir', join(work, 'cache')], { cwd: project });
    const summary = /^-- (\d+) prompt tokens, (\d+) new tokens/m.exec(out);
    const text = out.slice(0, summary?.index ?? 0).trim();
    if (!summary || Number(summary[2]) !== 4 || text === '') throw new Error(`expected an answer and "4 new tokens", got:\n${out}`);
    return JSON.stringify(text);
  });

  step('npx vlmkit demo (the checkpoint and picture packed with @vlmkit/cli)', () => {
    const out = run('npx', ['--no', 'vlmkit', 'demo', '--max-new-tokens', '4', '--cache-dir', join(work, 'cache')], { cwd: project });
    if (!/^-- (\d+) prompt tokens, 4 new tokens/m.test(out)) throw new Error(`expected "4 new tokens", got:\n${out}`);
    if (!out.includes(join(project, 'node_modules', '@vlmkit', 'cli', 'demo')))
      throw new Error(`the demo did not use the packed checkpoint:\n${out}`);
  });

  step('import every export from a plain .mjs', () => {
    const lines = [];
    [...exportNames].forEach(([name, keys], i) => {
      const named = keys.filter((k) => k !== 'default');
      lines.push(`import * as ns${i} from '${name}';`);
      if (named.length) lines.push(`import { ${named.map((k, j) => `${k} as n${i}_${j}`).join(', ')} } from '${name}';`);
      lines.push(`check('${name}', ns${i}, [${named.map((_, j) => `n${i}_${j}`).join(', ')}]);`);
    });
    const script = [
      'function check(name, ns, values) {',
      "  if (Object.keys(ns).length === 0) throw new Error(name + ': no exports');",
      '  const empty = Object.keys(ns).filter((k) => ns[k] === undefined);',
      "  if (empty.length || values.some((v) => v === undefined)) throw new Error(name + ': undefined exports ' + empty.join(', '));",
      '}',
      ...lines,
      "console.log('imports ok');",
    ];
    // The named imports fail at link time if the installed package lacks a name the workspace
    // build exports; function declarations are hoisted above them.
    writeFileSync(join(project, 'imports.mjs'), `${script.join('\n')}\n`);
    run(process.execPath, ['imports.mjs'], { cwd: project });
    return `${exportNames.size} packages`;
  });

  step('types of every package for a strict TypeScript consumer', () => {
    const imports = packages.map((p, i) => `import * as m${i} from '${p.json.name}';`);
    writeFileSync(
      join(project, 'types.ts'),
      `${imports.join('\n')}\nexport const all = [${packages.map((_, i) => `m${i}`).join(', ')}];\n`,
    );
    const compilerOptions = { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true };
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['types.ts'] }));
    // Our .d.ts files are checked (no skipLibCheck); third-party ones have errors of their own
    // under nodenext that are not ours to fix, so only errors in @vlmkit files or types.ts count.
    const tsc = join(REPO, 'node_modules/typescript/bin/tsc');
    const res = spawnSync(process.execPath, [tsc, '-p', '.'], { cwd: project, encoding: 'utf8' });
    if (res.error) throw res.error;
    const ours = res.stdout.split('\n').filter((line) => /^(node_modules\/@vlmkit\/|types\.ts\()/.test(line));
    if (ours.length) throw new Error(`tsc:\n  ${ours.join('\n  ')}`);
    return `${packages.length} packages`;
  });
} catch (err) {
  failed = true;
  console.error(`\nrelease:check FAILED: ${err instanceof StepError ? err.message : err?.stack}`);
} finally {
  if (args.keep) console.log(`release:check: kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
if (failed) process.exit(1);
console.log('release:check: ok');
