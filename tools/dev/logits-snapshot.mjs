#!/usr/bin/env node
// Records what the built CLI answers for every fixture case of both models under a set of load-option
// variants (`vlmkit forward` outputs and greedy `vlmkit generate` ids), then compares two such records:
// the check a refactor that must not change numbers makes, run on the tree before and after it.
//
//   node tools/dev/logits-snapshot.mjs record --root <repo> --out DIR --variants FILE.json
//   node tools/dev/logits-snapshot.mjs compare --before DIR --after DIR [--pairs FILE.json] [--tol 1e-6]
//
// A variants file maps a label to the CLI flags that select it in that tree, e.g.
// {"cpu": ["--device", "cpu"], "cpu-contrib": ["--device", "cpu", "--ops", "contrib"]}; a variant may be
// limited to some commands with {"flags": [...], "only": ["generate"]}. A pairs file maps a label of `after`
// to the label of `before` it must equal (default: the same label). tools/dev/logits-variants/ holds the two
// tables issue 17 used: before-issue-17.json (the --ops / --loop flags of 37a8884) and profiles.json (the
// same graphs selected through --profile).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const args = process.argv.slice(2);
const command = args[0];
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? fallback : args[i + 1];
};
const here = resolve(new URL('../..', import.meta.url).pathname);

function cases() {
  const out = [];
  for (const model of ['ernie-tiny', 'granite-tiny']) {
    const root = join(here, 'test-fixtures', model, 'cases');
    for (const name of readdirSync(root).sort()) {
      const json = JSON.parse(readFileSync(join(root, name, 'case.json'), 'utf8'));
      out.push({
        id: `${model}/${name}`,
        dir: join(root, name),
        checkpoint: join(here, 'test-fixtures', json.checkpoint),
        adapter: json.adapter ? join(here, 'test-fixtures', json.adapter) : undefined,
        newTokens: json.max_new_tokens ?? 8,
      });
    }
  }
  return out;
}

function record() {
  const root = resolve(opt('root', here));
  const outDir = resolve(opt('out'));
  const variants = JSON.parse(readFileSync(opt('variants'), 'utf8'));
  const cache = join(outDir, 'graph-cache');
  mkdirSync(cache, { recursive: true });
  const bin = join(root, 'packages/cli/dist/bin.js');
  const results = {};
  for (const c of cases()) {
    for (const [label, v] of Object.entries(variants)) {
      const flags = Array.isArray(v) ? v : v.flags;
      const only = Array.isArray(v) ? undefined : v.only;
      const base = ['--model', c.checkpoint, '--inputs', join(c.dir, 'inputs.safetensors'), '--cache-dir', cache, ...flags];
      if (c.adapter) base.push('--adapter', c.adapter);
      for (const cmd of ['forward', 'generate']) {
        if (only && !only.includes(cmd)) continue;
        const file = join(outDir, `${c.id.replace('/', '__')}__${label}__${cmd}.safetensors`);
        const extra = cmd === 'generate' ? ['--max-new-tokens', String(c.newTokens)] : [];
        const key = `${c.id}|${label}|${cmd}`;
        try {
          execFileSync(process.execPath, [bin, cmd, ...base, ...extra, '--out', file], { stdio: ['ignore', 'ignore', 'pipe'] });
          results[key] = 'ok';
        } catch (e) {
          results[key] = `error: ${String(e.stderr ?? e.message)
            .trim()
            .split('\n')
            .pop()}`;
        }
        process.stderr.write(`${key}: ${results[key]}\n`);
      }
    }
  }
  writeFileSync(join(outDir, 'results.json'), `${JSON.stringify(results, null, 1)}\n`);
}

/** Tensors of a safetensors file as float64 arrays (float32 and int64 only: what forward and generate write). */
function readTensors(file) {
  const buf = readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [a, b] = t.data_offsets;
    const bytes = buf.subarray(8 + n + a, 8 + n + b);
    const copy = new Uint8Array(bytes).buffer;
    if (t.dtype === 'F32') out[name] = Float64Array.from(new Float32Array(copy));
    else if (t.dtype === 'I64') out[name] = Float64Array.from(new BigInt64Array(copy), Number);
    else throw new Error(`${file}: ${name} has dtype ${t.dtype}`);
  }
  return out;
}

function compare() {
  const before = resolve(opt('before'));
  const after = resolve(opt('after'));
  const tol = Number(opt('tol', '1e-6'));
  const pairs = opt('pairs') ? JSON.parse(readFileSync(opt('pairs'), 'utf8')) : undefined;
  const afterResults = JSON.parse(readFileSync(join(after, 'results.json'), 'utf8'));
  const beforeResults = JSON.parse(readFileSync(join(before, 'results.json'), 'utf8'));
  const rows = [];
  let bad = 0;
  for (const [key, status] of Object.entries(afterResults)) {
    const [id, label, cmd] = key.split('|');
    const beforeLabel = pairs?.[label] ?? label;
    const beforeKey = `${id}|${beforeLabel}|${cmd}`;
    const file = (dir, l) => join(dir, `${id.replace('/', '__')}__${l}__${cmd}.safetensors`);
    if (beforeResults[beforeKey] === undefined) continue;
    if (status !== 'ok' || beforeResults[beforeKey] !== 'ok') {
      const same = status === beforeResults[beforeKey] || (status !== 'ok' && beforeResults[beforeKey] !== 'ok');
      rows.push({ key, worst: same ? 'both refused' : `before: ${beforeResults[beforeKey]} / after: ${status}` });
      if (!same) bad++;
      continue;
    }
    const a = readTensors(file(after, label));
    const b = readTensors(file(before, beforeLabel));
    let worst = 0;
    let ok = true;
    for (const [name, ref] of Object.entries(b)) {
      const got = a[name];
      if (got === undefined || got.length !== ref.length) {
        ok = false;
        continue;
      }
      let diff = 0;
      let scale = 0;
      for (let i = 0; i < ref.length; i++) {
        diff = Math.max(diff, Math.abs(got[i] - ref[i]));
        scale = Math.max(scale, Math.abs(ref[i]));
      }
      const rel = scale === 0 ? diff : diff / scale;
      // Ids and position ids must be equal; float outputs within `tol` of the largest magnitude.
      if (cmd === 'generate' || name === 'position_ids' ? diff !== 0 : rel > tol) ok = false;
      worst = Math.max(worst, rel);
    }
    if (!ok) bad++;
    rows.push({ key: `${key} (before: ${beforeLabel})`, worst: `${ok ? 'same' : 'DIFFERENT'} ${worst.toExponential(2)}` });
  }
  for (const r of rows) console.log(`${r.key}\t${r.worst}`);
  console.log(`${rows.length} compared, ${bad} different (tolerance ${tol} relative to max |before|; ids exact)`);
  process.exitCode = bad === 0 ? 0 : 1;
}

if (command === 'record') record();
else if (command === 'compare') compare();
else {
  console.error('usage: logits-snapshot.mjs record --root REPO --out DIR --variants FILE | compare --before DIR --after DIR');
  process.exitCode = 2;
}
if (command === 'record' && !existsSync(opt('out'))) process.exitCode = 1;
