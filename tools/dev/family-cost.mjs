#!/usr/bin/env node
// What a model family cost outside its own files: the measure issue 20 asks of a new family (at most 50 lines
// outside the family's folders and its new component files). Over the family's commits, each package source file
// (not a test, not test-utils) is either the family's own (created by those commits, or its path matches
// --family) or shared; shared files count their net lines (added - deleted over the commits), the family's
// their final lines; code lines are the same count without blank and comment-only lines. A commit that only
// moves shared code counts what it moved, as the diff does; a moved file counts as removed and created.
//
//   node tools/dev/family-cost.mjs --family qwen --commits 14511a0,bf9fdc9,... [--json]
//   node tools/dev/family-cost.mjs --family qwen --commits-file FILE   (one hash per line, # comments)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: o } = parseArgs({
  options: {
    family: { type: 'string' },
    commits: { type: 'string' },
    'commits-file': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const list = o.commits
  ? o.commits.split(',')
  : o['commits-file']
    ? readFileSync(o['commits-file'], 'utf8')
        .split('\n')
        .map((l) => l.replace(/#.*/, '').trim())
    : [];
const commits = list.filter((c) => c !== '');
if (!o.family || commits.length === 0) {
  console.error('usage: family-cost.mjs --family <path pattern> --commits a,b,c | --commits-file FILE [--json]');
  process.exit(2);
}
const family = new RegExp(o.family, 'i');
const git = (...a) => execFileSync('git', a, { encoding: 'utf8', maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] });
const source = (f) => /^packages\/[^/]+\/src\/.*\.ts$/.test(f) && !/\.test\.ts$|\/test-utils\//.test(f);

const created = new Set();
const net = new Map();
const code = new Map();
for (const c of commits) {
  for (const line of git('show', '--format=', '--numstat', '--no-renames', '--diff-filter=AMD', c).split('\n')) {
    const [add, del, file] = line.split('\t');
    if (file === undefined || !source(file) || add === '-') continue;
    const status = git('show', '--format=', '--name-status', '--no-renames', c, '--', file).trim().split('\t')[0];
    if (status === 'A') created.add(file);
    net.set(file, (net.get(file) ?? 0) + Number(add) - Number(del));
    // The same without blank and comment-only lines: how much of it is code.
    for (const l of git('show', '--format=', '-U0', '--no-renames', c, '--', file).split('\n')) {
      if (!/^[+-](?![+-]{2} )/.test(l) || /^[+-]\s*($|\/\/|\/\*|\*)/.test(l)) continue;
      code.set(file, (code.get(file) ?? 0) + (l[0] === '+' ? 1 : -1));
    }
  }
}
const own = (f) => created.has(f) || family.test(f);
const shared = [...net].filter(([f]) => !own(f)).sort((a, b) => b[1] - a[1]);
const ownFiles = [...net.keys()].filter(own);
const lines = (f) => {
  try {
    return git('show', `HEAD:${f}`).split('\n').length - 1;
  } catch {
    return 0; // removed since
  }
};
const result = {
  commits: commits.length,
  shared_net_lines: shared.reduce((n, [, d]) => n + d, 0),
  shared_net_code_lines: shared.reduce((n, [f]) => n + (code.get(f) ?? 0), 0),
  shared_files: Object.fromEntries(shared),
  family_lines: ownFiles.reduce((n, f) => n + lines(f), 0),
  family_files: ownFiles.length,
};
if (o.json) {
  console.log(JSON.stringify(result, null, 1));
} else {
  console.log(`${commits.length} commits; shared files, net lines (added - deleted):`);
  for (const [f, d] of shared) console.log(`${String(d).padStart(6)}  ${f}  (code ${code.get(f) ?? 0})`);
  console.log(
    `shared total: ${result.shared_net_lines} net lines in ${shared.length} files, ${result.shared_net_code_lines} of them code (not blank, not comment-only)`,
  );
  console.log(`the family's own files: ${result.family_files}, ${result.family_lines} lines at HEAD (tests excluded)`);
}
