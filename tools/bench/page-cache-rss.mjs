// Peak RSS of a cached load + greedy generate (vlmkit_side.mjs run) with the page cache of the graph cache and
// checkpoint files in three states, to tell vlmkit's own memory from the page cache's (docs/benchmarks.md,
// "int4 peak RSS"):
//   dropped  the files' cached pages dropped first: the run faults in only what it reads
//   read     dropped, then read through once (cat): the cache holds them in large folios
//   written  a fresh graph cache written by a cold load just before (what a run right after the first load sees)
// The decoder's float32 embedding table is memory-mapped by ORT; a decode step's Gather of a new token's row maps
// one page of it from a dropped cache, but a whole large folio (up to 2 MB) of a file that was written or read
// sequentially, so the last two states grow with the decode steps.
//
//   node tools/bench/page-cache-rss.mjs --dir CHECKPOINT --cache DIR [--side PATH] [--quantize int4]
//                                       [--new-tokens 64] [--rounds 2] [--states dropped,read,written]
//
// --side: the vlmkit_side.mjs to run (another worktree's, to compare commits on the same files); --cache: the
// graph cache to load from (built by a cold load when empty; 'written' uses DIR-written). Linux only (GNU dd's
// iflag=nocache drops a file's cached pages; /proc for the peak).
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { dropPageCache, filesUnder } from './page-cache.mjs';

const { values: o } = parseArgs({
  options: {
    dir: { type: 'string' },
    cache: { type: 'string' },
    side: { type: 'string' },
    quantize: { type: 'string', default: 'int4' },
    'new-tokens': { type: 'string', default: '64' },
    rounds: { type: 'string', default: '2' },
    states: { type: 'string', default: 'dropped,read,written' },
    threads: { type: 'string', default: '2' },
  },
});
if (!o.dir || !o.cache) {
  console.error('usage: node page-cache-rss.mjs --dir CHECKPOINT --cache GRAPH_CACHE [--side vlmkit_side.mjs] ...');
  process.exit(2);
}
const dir = resolve(o.dir);
const cache = resolve(o.cache);
const side = resolve(o.side ?? join(fileURLToPath(new URL('.', import.meta.url)), 'vlmkit_side.mjs'));
const opts = { threads: Number(o.threads), repeats: 1, newTokens: Number(o['new-tokens']), quantize: o.quantize };

const checkpointFiles = () => filesUnder(dir).filter((f) => f.endsWith('.safetensors'));
const readThrough = (paths) => {
  for (const f of paths) execFileSync('cat', [f], { stdio: ['ignore', 'ignore', 'inherit'] });
};

function runSide(mode, graphs) {
  const r = spawnSync(process.execPath, [side, mode, dir, graphs, JSON.stringify(opts)], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const last = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0) throw new Error(`${mode} failed (${r.status}): ${r.stderr.slice(-500)}`);
  return JSON.parse(last);
}

const exists = (p) => {
  try {
    return statSync(p).isDirectory() && readdirSync(p).length > 0;
  } catch {
    return false;
  }
};
if (!exists(cache)) runSide('cold', cache);

const rows = [];
for (let round = 1; round <= Number(o.rounds); round++) {
  for (const state of o.states.split(',')) {
    let graphs = cache;
    if (state === 'dropped' || state === 'read') {
      const paths = [...filesUnder(cache), ...checkpointFiles()];
      if (!dropPageCache(paths)) throw new Error('cannot drop the page cache here (needs Linux and GNU dd)');
      if (state === 'read') readThrough(paths);
    } else if (state === 'written') {
      graphs = `${cache}-written`;
      rmSync(graphs, { recursive: true, force: true });
      runSide('cold', graphs);
    } else {
      throw new Error(`unknown state '${state}' (dropped, read, written)`);
    }
    const r = runSide('run', graphs);
    rows.push({ round, state, peak_rss_mb: Math.round(r.peak_rss_mb), load_ms: Math.round(r.load_ms) });
    console.log(JSON.stringify(rows.at(-1)));
  }
}
const cpu = execFileSync('sh', ['-c', "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], { encoding: 'utf8' }).trim();
console.log(JSON.stringify({ side, quantize: opts.quantize, new_tokens: opts.newTokens, cpu, rows }));
