#!/usr/bin/env node
// pnpm release:version: the version cut. `changeset version` consumes the pending changesets
// (versions, CHANGELOG.md per package, internal ranges), then the lockfile is brought in step and
// the result checked: every public package at one version (the `fixed` group in
// .changeset/config.json) with a CHANGELOG.md that has a section for it. docs/releasing.md.
//
//   node tools/release/version.mjs [--expect VERSION]   # --expect: fail unless the cut gives VERSION
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({ options: { expect: { type: 'string' } } });

function run(cmd, argv) {
  console.log(`release:version: ${cmd} ${argv.join(' ')}`);
  const res = spawnSync(cmd, argv, { cwd: REPO, stdio: 'inherit' });
  if (res.status !== 0) {
    console.error(`release:version FAILED: \`${cmd} ${argv.join(' ')}\` exited with ${res.status ?? res.signal ?? res.error?.message}`);
    process.exit(1);
  }
}

run('pnpm', ['exec', 'changeset', 'version']);
// Internal dependencies are workspace:* (not in the lockfile's specifiers), so this is usually a
// no-op; it keeps `pnpm install --frozen-lockfile` valid if a range ever moves.
run('pnpm', ['install', '--lockfile-only', '--ignore-scripts']);

const problems = [];
const released = [];
for (const name of readdirSync(join(REPO, 'packages'))) {
  const dir = join(REPO, 'packages', name);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  if (pkg.private) continue;
  released.push(pkg);
  const changelog = join(dir, 'CHANGELOG.md');
  if (!existsSync(changelog)) problems.push(`${pkg.name}: no CHANGELOG.md`);
  else if (!readFileSync(changelog, 'utf8').includes(`\n## ${pkg.version}\n`))
    problems.push(`${pkg.name}: CHANGELOG.md has no "## ${pkg.version}"`);
}
const versions = new Set(released.map((p) => p.version));
if (versions.size !== 1) problems.push(`versions differ: ${released.map((p) => `${p.name}@${p.version}`).join(', ')}`);
if (args.expect && !versions.has(args.expect)) problems.push(`expected ${args.expect}, the cut gives ${[...versions].join(', ')}`);
if (problems.length) {
  console.error(`release:version FAILED:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(
  `release:version: ${released.length} packages at ${[...versions][0]}, each with a CHANGELOG.md; review with git diff, then commit`,
);
