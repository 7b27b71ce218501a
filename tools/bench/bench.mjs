// `pnpm bench`: vlmkit (onnxruntime-node, CPU) against PyTorch (HF transformers 5.17, CPU) in one run, same
// checkpoint, same inputs, same thread count; each measurement in its own child process (its peak RSS is its own).
// Needs `pnpm build` (the script does it) and the Python reference env .venv-ref (tools/fixtures/README.md,
// tools/bench/requirements.txt). Not part of the tests or CI. See tools/bench/README.md for the options.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LOAD_OPTIONS } from '../../packages/models/dist/index.js';
import { ernie28bFull } from './ernie28b-full.mjs';
import { dropPageCache, filesUnder } from './page-cache.mjs';
import { QWEN3VL_CONFIGS, qwen3vlConfigDir, qwen3vlGoals, qwen3vlSummary } from './qwen3vl.mjs';

// `pnpm bench --serve`: `vlmkit serve` under concurrent streams (serve-bench.mjs, its own options).
if (process.argv.includes('--serve')) {
  const { serveBench } = await import('./serve-bench.mjs');
  process.exit(await serveBench(process.argv.slice(2).filter((x) => x !== '--serve')));
}

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const here = join(root, 'tools/bench');
const python = join(root, '.venv-ref/bin/python');

const { values: o } = parseArgs({
  options: {
    only: { type: 'string', default: 'medium' },
    real: { type: 'boolean', default: false },
    qwen3vl: { type: 'boolean', default: false },
    'qwen3vl-layers': { type: 'string' },
    'qwen3vl-vision-layers': { type: 'string' },
    curves: { type: 'boolean', default: false },
    'curves-only': { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    cache: { type: 'string', default: join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'vlmkit-bench') },
    threads: { type: 'string', default: '2' },
    repeats: { type: 'string' },
    'new-tokens': { type: 'string' },
    quantize: { type: 'string' },
    'quantize-vision': { type: 'string' },
    'granite-layers': { type: 'string', default: '8' },
    'granite-full': { type: 'boolean', default: false },
    'ernie28b-layers': { type: 'string' },
    'ernie28b-vision-layers': { type: 'string' },
    'ernie28b-full': { type: 'boolean', default: false },
    'ernie28b-keep': { type: 'boolean', default: false },
    'disk-spare-gb': { type: 'string', default: '8' },
    'mem-floor-mb': { type: 'string', default: '1500' },
    plots: { type: 'string', default: join(root, 'docs/benchmarks') },
    help: { type: 'boolean', default: false },
  },
});
if (o.help) {
  process.stdout.write(readFileSync(join(here, 'README.md'), 'utf8').split('## Options')[1]?.split('\n## ')[0] ?? '');
  process.exit(0);
}

const threads = Number(o.threads);
const repeats = Number(o.repeats ?? (o.quick ? 1 : 3));
const newTokens = Number(o['new-tokens'] ?? (o.quick ? 16 : 64));
const cache = resolve(o.cache);
const quantizeVision = o['quantize-vision'];
if (quantizeVision !== undefined && !['int8', 'int4'].includes(quantizeVision)) {
  console.error(`--quantize-vision must be int8 or int4, got '${quantizeVision}'`);
  process.exit(2);
}
mkdirSync(cache, { recursive: true });
const log = (msg) => process.stderr.write(`[bench] ${msg}\n`);

// ---------------------------------------------------------------------------------------------------------------
// what is measured

// 'qwen3vl' in --only, or --qwen3vl: both Qwen3-VL configs (qwen3vl.mjs).
const configs = new Set(o.only.split(',').flatMap((c) => (c === 'qwen3vl' ? QWEN3VL_CONFIGS : c ? [c] : [])));
if (o.qwen3vl) for (const c of QWEN3VL_CONFIGS) configs.add(c);
if (o.real) {
  configs.add('granite');
  configs.add('ernie28b');
}
if (o['curves-only']) configs.clear();
for (const c of configs) {
  if (!['medium', 'granite', 'ernie28b', ...QWEN3VL_CONFIGS].includes(c))
    throw new Error(`--only: unknown config '${c}' (medium, granite, ernie28b, ${QWEN3VL_CONFIGS.join(', ')}, qwen3vl)`);
}

/** Quantized modes the models package offers: `quantize` in its load options (`LOAD_OPTIONS`). */
function quantModes() {
  const offered = 'quantize' in LOAD_OPTIONS;
  const wanted = (o.quantize ?? 'float32,int8,int4').split(',');
  return wanted.filter((q) => q === 'float32' || (offered && ['int8', 'int4'].includes(q)));
}
const modes = quantModes();

function configDir(name) {
  if (QWEN3VL_CONFIGS.includes(name)) return qwen3vlConfigDir(name, cache, o);
  if (name === 'medium') return { dir: join(cache, 'ernie-medium'), make: ['--config', 'medium'] };
  if (name === 'ernie28b') {
    const l = o['ernie28b-layers'] ?? '2';
    const v = o['ernie28b-vision-layers'] ?? '4';
    return { dir: join(cache, `ernie28b-l${l}-v${v}`), make: ['--config', 'ernie28b', '--layers', l, '--vision-layers', v] };
  }
  const l = name === 'granite-full' ? '40' : o['granite-layers'];
  return { dir: join(cache, `granite-3b-l${l}`), make: ['--config', 'granite', '--layers', l] };
}

// ---------------------------------------------------------------------------------------------------------------
// child processes, watched for memory

function memAvailableMb() {
  const m = /MemAvailable:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.POSITIVE_INFINITY;
}

function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Runs a child to completion and parses the last stdout line as JSON. A watchdog kills it (SIGKILL) when the
 * machine's available memory falls under --mem-floor-mb, so that an out-of-memory load is a reported result, not a
 * kernel OOM kill of some other process; `stopIf` (optional, checked with it) returns a reason to kill it too.
 * Never throws: failures come back as { error }.
 */
function child(cmd, args, what, stopIf) {
  const floor = Number(o['mem-floor-mb']);
  return new Promise((done) => {
    const t0 = performance.now();
    const p = spawn(cmd, args, {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, OMP_NUM_THREADS: String(threads), MKL_NUM_THREADS: String(threads) },
    });
    let out = '';
    let maxRss = 0;
    let killed;
    p.stdout.on('data', (d) => {
      out += d;
    });
    const watch = setInterval(() => {
      maxRss = Math.max(maxRss, rssMb(p.pid));
      const avail = memAvailableMb();
      if (avail < floor && !killed) {
        killed = `killed by the bench: the machine had ${avail.toFixed(0)} MB available (floor ${floor}) with the child at ${rssMb(p.pid).toFixed(0)} MB RSS`;
        p.kill('SIGKILL');
      }
      const stop = killed ? undefined : stopIf?.();
      if (stop) {
        killed = stop;
        p.kill('SIGKILL');
      }
    }, 200);
    p.on('close', (code, signal) => {
      clearInterval(watch);
      const wallS = (performance.now() - t0) / 1e3;
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code === 0) {
        try {
          done({ ...JSON.parse(last), wall_s: wallS });
          return;
        } catch {}
      }
      const error = killed ?? `${what}: exit ${code ?? signal}${last ? `: ${last.slice(0, 300)}` : ''}`;
      log(`FAILED ${error}`);
      done({ error, max_rss_seen_mb: maxRss, wall_s: wallS });
    });
  });
}

const torchSide = (args, what) => child(python, [join(here, 'torch_side.py'), ...args], what);
const vlmkitSide = (mode, dir, graphs, opts, what, stopIf) =>
  child(process.execPath, [join(here, 'vlmkit_side.mjs'), mode, dir, graphs, JSON.stringify({ threads, ...opts })], what, stopIf);

async function makeConfig(name) {
  const { dir, make } = configDir(name);
  log(`${name}: checkpoint ${dir} (built once)`);
  const info = await torchSide(['make', '--dir', dir, ...make], `make ${name}`);
  if (info.error) throw new Error(`could not build the ${name} checkpoint: ${info.error}`);
  return { dir, info };
}

// ---------------------------------------------------------------------------------------------------------------
// the machine

function machine() {
  const cpu = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /model name\s*:\s*(.*)/.exec(cpu)?.[1] ?? 'unknown';
  const flags = new Set(/flags\s*:\s*(.*)/.exec(cpu)?.[1].split(/\s+/) ?? []);
  const shown = ['avx2', 'fma', 'avx512f', 'avx512_vnni', 'avx512_bf16', 'avx_vnni', 'amx_int8'].filter((f) => flags.has(f));
  const cores = (cpu.match(/^processor\s*:/gm) ?? []).length;
  const memGb = Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1]) / 1024 ** 2;
  const git = (args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
  const dirty = git(['status', '--porcelain', '--untracked-files=no', 'packages']) !== '';
  return {
    cpu: model,
    flags: shown,
    cores,
    mem_gb: Number(memGb.toFixed(1)),
    commit: git(['rev-parse', '--short', 'HEAD']) + (dirty ? ' (+ uncommitted changes in packages/)' : ''),
    node: process.version,
    onnxruntime: JSON.parse(readFileSync(join(root, 'packages/runtime/node_modules/onnxruntime-node/package.json'), 'utf8')).version,
  };
}

/**
 * Read bandwidth: tools/bench/bandwidth.c (cc, OpenMP) when it compiles, else numpy's sum; 2 GB, best of 7 passes
 * with 1 thread and with the bench's threads, the higher kept (on a shared machine the second core may be busy).
 */
function bandwidth() {
  const bin = join(cache, 'bandwidth');
  try {
    execFileSync('cc', ['-O3', '-march=native', '-fopenmp', '-ffast-math', join(here, 'bandwidth.c'), '-o', bin], { stdio: 'pipe' });
    const runs = [...new Set([1, threads])].map((t) =>
      JSON.parse(execFileSync(bin, ['2048', String(t), '7'], { encoding: 'utf8' }).trim()),
    );
    const best = runs.reduce((a, b) => (b.gbps > a.gbps ? b : a));
    return { ...best, method: `${best.method}; best of 1 and ${threads} threads (${runs.map((r) => r.gbps.toFixed(1)).join(', ')} GB/s)` };
  } catch (e) {
    log(`bandwidth.c did not build or run (${String(e).slice(0, 120)}); numpy instead`);
    const code = `import numpy as np, time, json
a = np.ones(512 * 1024 * 1024, dtype=np.float32); best = 1e9
for _ in range(7):
    t = time.perf_counter(); a.sum(); best = min(best, time.perf_counter() - t)
print(json.dumps({"method": "numpy float32 sum over 2 GB (1 thread), best of 7", "gbps": a.nbytes / best / 1e9}))`;
    return JSON.parse(execFileSync(python, ['-c', code], { encoding: 'utf8' }).trim().split('\n').at(-1));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// one config: PyTorch, then vlmkit in each mode

async function benchConfig(name) {
  const { dir, info } = await makeConfig(name);
  const hfOut = join(cache, `hf-${name}.safetensors`);
  log(`${name}: PyTorch (${repeats} repeats, ${newTokens} new tokens)`);
  const pt = await torchSide(
    ['run', '--dir', dir, '--threads', String(threads), '--repeats', String(repeats), '--decode-repeats', String(repeats)].concat([
      '--new-tokens',
      String(newTokens),
      '--out',
      hfOut,
    ]),
    `PyTorch ${name}`,
  );
  const vk = {};
  const onlyFloat = name === 'granite-full';
  for (const q of onlyFloat ? ['float32'] : modes) {
    const graphs = join(cache, 'graphs', `${name}-${q}`);
    // --quantize-vision: the quantized modes' vision encoders block-quantized too (load option quantize: { decoder, vision }).
    const qopt =
      q === 'float32' ? {} : { quantize: q, ...(quantizeVision ? { load: { quantize: { decoder: q, vision: quantizeVision } } } : {}) };
    log(`${name}: vlmkit ${q}: cold load + teacher-forced logits`);
    const cold = await vlmkitSide('cold', dir, graphs, { ...qopt, hfOut: pt.error ? undefined : hfOut }, `vlmkit ${q} cold ${name}`);
    // What the first load left on disk (the cold run starts from an empty cache), against the checkpoint's weights.
    if (!cold.error)
      cold.cache_ratio = bytesOf(filesUnder(graphs)) / bytesOf(filesUnder(dir).filter((f) => /\/model[^/]*\.safetensors$/.test(f)));
    // The cold load wrote the graph cache and read the checkpoint: their page cache would make the run's peak RSS
    // depend on how the files were filled, not on what vlmkit touches (page-cache.mjs). Dropped, then one untimed
    // load reads back what a load reads.
    if (dropPageCache([...filesUnder(graphs), ...filesUnder(dir)])) {
      await vlmkitSide('run', dir, graphs, { ...qopt, repeats: 0, newTokens: 1 }, `vlmkit ${q} warm-up ${name}`);
    }
    log(`${name}: vlmkit ${q}: cached load + generate`);
    const run = await vlmkitSide('run', dir, graphs, { ...qopt, repeats, newTokens }, `vlmkit ${q} ${name}`);
    vk[q] = { cold, run };
  }
  return { name, info, pytorch: pt, vlmkit: vk };
}

// ---------------------------------------------------------------------------------------------------------------
// tables

const bytesOf = (files) => files.reduce((n, f) => n + statSync(f).size, 0);
const f0 = (x) => (x === undefined || x === null || Number.isNaN(x) ? '-' : x.toFixed(0));
const f1 = (x) => (x === undefined || x === null || Number.isNaN(x) ? '-' : x.toFixed(1));
const ratio = (a, b) => (a === undefined || b === undefined || a === null || b === null || !b ? null : a / b);
const fr = (x) => (x === null || x === undefined ? '-' : x.toFixed(2));

function sameIds(a, b) {
  return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => x === b[i]);
}

function table(r, bw) {
  const pt = r.pytorch;
  const cols = Object.keys(r.vlmkit);
  const rows = [
    ['vision (tower + resampler / projectors)', 'vision_ms', f0, 'ms'],
    [`prefill, ${r.info.seq} tokens`, 'prefill_ms', f0, 'ms'],
    [`decode, per token (${newTokens} greedy steps)`, 'decode_ms', f1, 'ms'],
    ['load (vlmkit: cached graphs)', 'load_ms', f0, 'ms'],
    ['peak RSS (VmHWM)', 'peak_rss_mb', f0, 'MB'],
    ['graph cache / checkpoint weights (after the cold load)', 'cache_ratio', fr, ''],
  ];
  const head = ['step', 'PyTorch f32', ...cols.flatMap((q) => [`vlmkit ${q}`, `${q} / PyTorch`])];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const [label, key, fmt, unit] of rows) {
    // A child the bench killed for memory shows the RSS it had reached.
    const cell = (res) =>
      res.error
        ? key === 'peak_rss_mb' && res.error.startsWith('killed by the bench')
          ? `> ${f0(res.max_rss_seen_mb)} MB (killed)`
          : 'failed'
        : `${fmt(res[key])} ${unit}`;
    if (key === 'cache_ratio') {
      lines.push(`| ${[label, '-', ...cols.flatMap((q) => [fr(r.vlmkit[q].cold.cache_ratio), '-'])].join(' | ')} |`);
      continue;
    }
    const cells = [label, cell(pt)];
    for (const q of cols) {
      const run = r.vlmkit[q].run;
      let v = cell(run);
      if (key === 'load_ms' && !r.vlmkit[q].cold.error) v += ` (cold ${f0(r.vlmkit[q].cold.load_cold_ms)})`;
      cells.push(v, run.error || pt.error ? '-' : fr(ratio(run[key], pt[key])));
    }
    lines.push(`| ${cells.join(' | ')} |`);
  }
  const notes = [];
  for (const q of cols) {
    const { cold, run } = r.vlmkit[q];
    const parts = [];
    if (!run.error && !pt.error)
      parts.push(`greedy ids ${sameIds(run.ids, pt.ids) ? 'identical' : `differ (${firstDiff(run.ids, pt.ids)})`}`);
    if (cold.logits_max_diff !== undefined) {
      parts.push(
        `teacher-forced logits over the ${pt.ids.length} generated positions: max |diff| ${cold.logits_max_diff.toExponential(2)} (max |logit| ${cold.logits_max_ref.toFixed(2)}), top-1 agreement ${(cold.teacher_forced_top1 * 100).toFixed(1)}%`,
      );
    }
    if (run.error) parts.push(`run: ${run.error}`);
    if (cold.error) parts.push(`cold: ${cold.error}`);
    notes.push(`- vlmkit ${q}: ${parts.join('; ')}`);
  }
  if (bw && !pt.error) {
    const bytes = r.info.active_params_per_token * 4;
    const line = (label, ms) =>
      `${label} ${(bytes / (ms / 1e3) / 1e9).toFixed(1)} GB/s (${((bytes / (ms / 1e3) / 1e9 / bw.gbps) * 100).toFixed(0)}%)`;
    const f32 = r.vlmkit.float32?.run;
    notes.push(
      `- decode weight stream (float32: ${(r.info.active_params_per_token / 1e6).toFixed(1)}M active parameters per token x 4 bytes = ${(bytes / 1e9).toFixed(3)} GB) against the measured read bandwidth ${bw.gbps.toFixed(1)} GB/s: ${line('PyTorch', pt.decode_ms)}${f32 && !f32.error ? `, ${line('vlmkit float32', f32.decode_ms)}` : ''}`,
    );
  }
  return [
    `### ${r.name}: ${(r.info.params / 1e6).toFixed(0)}M parameters (${r.info.dtype} on disk), ${r.info.text_layers} text / ${r.info.vision_layers} vision layers, ${r.info.image}, ${r.info.seq}-token prompt`,
    '',
    ...lines,
    '',
    ...notes,
  ].join('\n');
}

function firstDiff(a, b) {
  if (!Array.isArray(a) || !Array.isArray(b)) return 'missing';
  const i = a.findIndex((x, k) => x !== b[k]);
  return `first at step ${i}: ${a[i]} vs ${b[i]}`;
}

// ---------------------------------------------------------------------------------------------------------------
// curves

async function curves() {
  const { dir } = await makeConfig('medium');
  const points = o.quick
    ? {
        grids: [
          [16, 16],
          [32, 32],
        ],
        lengths: [256, 1024],
      }
    : {
        grids: [
          [16, 16],
          [16, 32],
          [32, 32],
          [32, 64],
          [64, 64],
        ],
        lengths: [256, 512, 1024, 2048, 4096],
      };
  const cRepeats = o.quick ? 1 : 2;
  const cTokens = o.quick ? 8 : 16;
  log(`curves: PyTorch (${JSON.stringify(points)})`);
  const pt = await torchSide(
    [
      'curves',
      '--dir',
      dir,
      '--threads',
      String(threads),
      '--repeats',
      String(cRepeats),
      '--new-tokens',
      String(cTokens),
      '--points',
      JSON.stringify(points),
    ],
    'PyTorch curves',
  );
  const vk = {};
  for (const q of modes) {
    log(`curves: vlmkit ${q}`);
    const graphs = join(cache, 'graphs', `medium-${q}`);
    vk[q] = await vlmkitSide(
      'curves',
      dir,
      graphs,
      { ...(q === 'float32' ? {} : { quantize: q }), repeats: cRepeats, newTokens: cTokens, points },
      `vlmkit ${q} curves`,
    );
  }
  return { points, repeats: cRepeats, new_tokens: cTokens, pytorch: pt, vlmkit: vk };
}

// ---------------------------------------------------------------------------------------------------------------

const started = new Date().toISOString();
const mach = machine();
log(
  `${mach.cpu} (${mach.flags.join(' ')}), ${mach.cores} cores, commit ${mach.commit}; vlmkit modes: ${modes.join(', ')}${quantizeVision ? ` (quantized modes with ${quantizeVision} vision)` : ''}`,
);
if (o['ernie28b-full']) {
  // vlmkit only, its own table (ernie28b-full.mjs); nothing else runs with it.
  await ernie28bFull({
    cache,
    threads,
    newTokens: Number(o['new-tokens'] ?? 32),
    repeats: Number(o.repeats ?? 1),
    layers: (o['ernie28b-layers'] ?? '28').split(',').map(Number),
    visionLayers: Number(o['ernie28b-vision-layers'] ?? 32),
    quantize: o.quantize ?? 'int4',
    quantizeVision,
    spareGb: Number(o['disk-spare-gb']),
    keep: o['ernie28b-keep'],
    memFloorMb: Number(o['mem-floor-mb']),
    torchSide,
    vlmkitSide,
    log,
    machine: mach,
  });
  process.exit(0);
}
const bw = bandwidth();
log(`read bandwidth ${bw.gbps.toFixed(1)} GB/s (${bw.method})`);
const results = [];
for (const name of ['medium', 'granite', 'ernie28b', ...QWEN3VL_CONFIGS]) if (configs.has(name)) results.push(await benchConfig(name));
if (o['granite-full']) results.push(await benchConfig('granite-full'));
const curveResult = o.curves || o['curves-only'] ? await curves() : undefined;

let plots;
if (curveResult) {
  mkdirSync(o.plots, { recursive: true });
  const file = join(cache, 'curves.json');
  writeFileSync(file, JSON.stringify({ ...curveResult, machine: mach }, null, 1));
  const p = await child(python, [join(here, 'plot.py'), file, o.plots], 'plot');
  plots = p.error ? { error: p.error } : p;
}

// The summary object: ratios of the medium config, quantized vlmkit over float32 PyTorch.
const medium = results.find((r) => r.name === 'medium');
const m = (q, key) => {
  const run = medium?.vlmkit[q]?.run;
  return run && !run.error ? run[key] : null;
};
const p = (key) => (medium && !medium.pytorch.error ? medium.pytorch[key] : null);
const full = results.find((r) => r.name === 'granite-full');
const fullRss = full ? ratio(full.vlmkit.float32.run.error ? null : full.vlmkit.float32.run.peak_rss_mb, full.pytorch.peak_rss_mb) : null;
const activeBytes = medium ? medium.info.active_params_per_token * 4 : null;
const summary = {
  vision_ratio: ratio(m('float32', 'vision_ms'), p('vision_ms')),
  prefill_ratio: ratio(m('float32', 'prefill_ms'), p('prefill_ms')),
  decode_ratio: ratio(m('float32', 'decode_ms'), p('decode_ms')),
  load_ratio: ratio(m('float32', 'load_ms'), p('load_ms')),
  cold_load_ratio: ratio(medium?.vlmkit.float32?.cold.load_cold_ms ?? null, p('load_ms')),
  cache_ratio: medium?.vlmkit.float32?.cold.cache_ratio ?? null,
  cache_int4_ratio: medium?.vlmkit.int4?.cold.cache_ratio ?? null,
  rss_ratio: ratio(m('float32', 'peak_rss_mb'), p('peak_rss_mb')),
  prefill_int8_ratio: ratio(m('int8', 'prefill_ms'), p('prefill_ms')),
  decode_int4_ratio: ratio(m('int4', 'decode_ms'), p('decode_ms')),
  rss_int4_ratio: ratio(m('int4', 'peak_rss_mb'), p('peak_rss_mb')),
  bandwidth_fraction: m('float32', 'decode_ms') ? activeBytes / (m('float32', 'decode_ms') / 1e3) / 1e9 / bw.gbps : null,
  pytorch_bandwidth_fraction: p('decode_ms') ? activeBytes / (p('decode_ms') / 1e3) / 1e9 / bw.gbps : null,
  granite_full_rss_ratio: fullRss,
  qwen3vl: qwen3vlSummary(results),
  bandwidth_gbps: bw.gbps,
  quantize_vision: quantizeVision ?? null,
  ids_identical: medium ? sameIds(m('float32', 'ids'), p('ids')) : null,
  logits_max_diff: medium?.vlmkit.float32?.cold.logits_max_diff ?? null,
  medians: Object.fromEntries(
    results.map((r) => [
      r.name,
      {
        pytorch: pick(r.pytorch),
        ...Object.fromEntries(
          Object.entries(r.vlmkit).map(([q, v]) => [`vlmkit_${q}`, { ...pick(v.run), load_cold_ms: v.cold.load_cold_ms ?? null }]),
        ),
      },
    ]),
  ),
  commit: mach.commit,
  cpu: `${mach.cpu} (${mach.flags.join(' ')})`,
  threads,
  repeats,
  new_tokens: newTokens,
};

function pick(x) {
  if (x.error) return { error: x.error, max_rss_seen_mb: x.max_rss_seen_mb ?? null };
  const keys = ['vision_ms', 'prefill_ms', 'decode_ms', 'load_ms', 'peak_rss_mb'];
  return Object.fromEntries(keys.map((k) => [k, x[k] ?? null]));
}

const stamp = started.replace(/[:.]/g, '-');
mkdirSync(join(cache, 'results'), { recursive: true });
const md = [
  `Run ${started}, commit ${mach.commit}; ${mach.cpu} (${mach.flags.join(', ')}), ${mach.cores} cores, ${mach.mem_gb} GB; ${threads} threads each; medians of ${repeats}; Node ${mach.node}, onnxruntime-node ${mach.onnxruntime}; PyTorch ${results[0]?.pytorch.torch ?? curveResult?.pytorch?.torch ?? ''} (HF transformers 5.17, sdpa, grouped_mm experts), float32.`,
  `Read bandwidth: ${bw.gbps.toFixed(1)} GB/s (${bw.method}).`,
  '',
  ...results.map((r) => table(r, bw)),
];
if (medium) {
  // Issue 9's goals, on the medium config's ratios.
  const goals = [
    ['float32 vision', 'vision_ratio', '<=', 1],
    ['float32 prefill', 'prefill_ratio', '<=', 1],
    ['float32 decode', 'decode_ratio', '<=', 1],
    ['float32 load (cached)', 'load_ratio', '<=', 1],
    ['float32 peak RSS', 'rss_ratio', '<=', 0.8],
    ['int8 prefill', 'prefill_int8_ratio', '<=', 0.5],
    ['int4 decode', 'decode_int4_ratio', '<=', 0.3],
    ['int4 peak RSS', 'rss_int4_ratio', '<=', 0.35],
    ['float32 decode weight stream / read bandwidth', 'bandwidth_fraction', '>=', 0.8],
    ['float32 first load (cold) / PyTorch load (issue 18)', 'cold_load_ratio', '<=', 2],
    ['float32 graph cache / checkpoint (issue 18)', 'cache_ratio', '<=', 0.25],
  ];
  md.push(
    '### Goals (issues 9 and 18), medium config',
    [
      '| goal | measured | target | met |',
      '|---|---|---|---|',
      ...goals.map(([label, key, op, target]) => {
        const v = summary[key];
        const met = v === null ? 'not measured' : (op === '<=' ? v <= target : v >= target) ? 'yes' : 'no';
        return `| ${label} | ${v === null ? '-' : v.toFixed(2)} | ${op} ${target} | ${met} |`;
      }),
    ].join('\n'),
  );
}
md.push(...qwen3vlGoals(summary.qwen3vl));
const resultFile = join(cache, 'results', `${stamp}.json`);
writeFileSync(resultFile, JSON.stringify({ machine: mach, bandwidth: bw, results, curves: curveResult, plots, summary }, null, 1));
const mdText = md.join('\n\n').replace(/\n{3,}/g, '\n\n');
writeFileSync(join(cache, 'results', `${stamp}.md`), mdText);
console.log(mdText);
if (plots && !plots.error) console.log(`\nplots: ${plots.files.join(', ')}`);
log(`results: ${resultFile}`);
if (o.json) console.log(JSON.stringify(summary));
