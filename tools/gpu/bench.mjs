// The medium benchmark on a GPU (issue 11): PyTorch eager (HF transformers) and vlmkit (onnxruntime-node, CUDA EP)
// on the same GPU, same checkpoint, same prompt, in one run; one table. Runs on the GPU machine from the stage that
// tools/gpu/pack.sh builds (check.sh runs it), or here with --device cpu as a dry run of the whole path.
//
//   node tools/gpu/bench.mjs [--device cuda] [--dir D] [--python python3] [--repeats 3] [--new-tokens 64]
//                            [--out FILE.json] [--quick]
//
// Steps, each in its own child process (tools/bench/torch_side.py and tools/bench/vlmkit_side.mjs, the sides of
// `pnpm bench`):
//   1. the medium ERNIE checkpoint of issue 9 (392M parameters, float32, one 448x448 image in a 1280-token prompt),
//      made into D by torch_side.py (once; needs torch + transformers 5.17);
//   2. PyTorch on the device: load, vision, prefill (1280 tokens, last position's logits), greedy decode of N tokens
//      (ms/token: median step, synchronized), peak GPU memory (torch.cuda.max_memory_allocated/reserved);
//   3. vlmkit cold: builds the graphs into the cache, then a teacher-forced forward compared with PyTorch's logits;
//   4. vlmkit runs, one per variant the models package offers (host decode loop; in-graph loop; compute dtypes):
//      vision, prefill, decode ms/token = (generate - vision - prefill) / (N - 1), the device's memory in use at its
//      peak (nvidia-smi, sampled every 100 ms, minus what was in use before the child started).
// Prints the table (markdown) and, last, one JSON line; writes the JSON to --out (default $OUT/gpu-bench.json).
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LOAD_OPTIONS, OPS_FIELDS, PROFILE_FIELDS } from '../../packages/models/dist/index.js';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const bench = join(root, 'tools/bench');

const { values: o } = parseArgs({
  options: {
    device: { type: 'string', default: 'cuda' },
    dir: { type: 'string', default: '/tmp/vlmkit-gpu/ernie-medium' },
    cache: { type: 'string' },
    python: { type: 'string', default: 'python3' },
    repeats: { type: 'string' },
    'new-tokens': { type: 'string' },
    threads: { type: 'string' },
    out: { type: 'string' },
    quick: { type: 'boolean', default: false },
  },
});
const device = o.device;
const dir = resolve(o.dir);
const cache = resolve(o.cache ?? `${dir}-graphs`);
const repeats = Number(o.repeats ?? (o.quick ? 1 : 3));
const newTokens = Number(o['new-tokens'] ?? (o.quick ? 8 : 64));
// CPU threads: the host side of both systems (PyTorch's CPU ops, ORT's CPU nodes and session setup).
const threads = Number(o.threads ?? 4);
const outFile = o.out ?? join(process.env.OUT ?? dir, 'gpu-bench.json');
const log = (msg) => process.stderr.write(`[gpu-bench] ${msg}\n`);

// ---------------------------------------------------------------------------------------------------------------
// the variants: what the built models package offers (its exported LOAD_OPTIONS and PROFILE_FIELDS)

const offers = (option) => option in LOAD_OPTIONS;
const profileHas = (field) => PROFILE_FIELDS.includes(field);

/**
 * vlmkit variants: a label, extra fromPretrained options, extra generate options. The device's profile is what the
 * first row runs; the others override its fields (the load option `profile`), to choose its values by measurement.
 */
function variants() {
  const out = [{ label: 'float32, host loop', load: {}, generate: {} }];
  const loop = profileHas('loop') ? { loop: 'graph' } : {};
  const graph = profileHas('loop') ? ', graph loop' : '';
  if (profileHas('loop')) {
    out[0] = { label: 'float32, host loop', load: { profile: { loop: 'host' } }, generate: { loop: 'host' } };
    out.push({ label: 'float32, graph loop', load: { profile: loop }, generate: loop });
  }
  if (profileHas('decoderPasses')) {
    // The cpu profile's decoder passes (no fused kernels) over the device's profile, the CLI's `--ops onnx`.
    out.push({ label: `float32${graph}, ops onnx`, load: { profile: { ...OPS_FIELDS.onnx, ...loop } }, generate: loop });
  }
  if (offers('dtype')) {
    for (const dtype of ['float16', 'bfloat16']) {
      out.push({ label: `${dtype}${graph}`, load: { dtype, profile: loop }, generate: loop, dtype });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// child processes, with the device's memory sampled while they run

function gpuMemoryUsedMb() {
  if (device !== 'cuda') return Number.NaN;
  try {
    const s = execFileSync('nvidia-smi', ['--query-gpu=memory.used', '--format=csv,noheader,nounits'], { encoding: 'utf8' });
    return Number(s.trim().split('\n')[0]);
  } catch {
    return Number.NaN;
  }
}

function child(cmd, args, what) {
  return new Promise((done) => {
    const before = gpuMemoryUsedMb();
    let peak = before;
    const t0 = performance.now();
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, OMP_NUM_THREADS: String(threads) } });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    const watch = setInterval(() => {
      const m = gpuMemoryUsedMb();
      if (m > peak) peak = m;
    }, 100);
    p.on('close', (code, signal) => {
      clearInterval(watch);
      const last = out.trim().split('\n').at(-1) ?? '';
      const extra = { wall_s: (performance.now() - t0) / 1e3, gpu_used_peak_mb: peak - before };
      if (code === 0) {
        try {
          done({ ...JSON.parse(last), ...extra });
          return;
        } catch {}
      }
      const error = `${what}: exit ${code ?? signal}${last ? `: ${last.slice(0, 400)}` : ''}`;
      log(`FAILED ${error}`);
      done({ error, ...extra });
    });
  });
}

const py = (args, what) => child(o.python, [join(bench, 'torch_side.py'), ...args], what);
const vl = (mode, opts, what) =>
  child(
    process.execPath,
    [join(bench, 'vlmkit_side.mjs'), mode, dir, cache, JSON.stringify({ threads, repeats, newTokens, device, ...opts })],
    what,
  );

// ---------------------------------------------------------------------------------------------------------------
// the run

mkdirSync(dir, { recursive: true });
log(`checkpoint ${dir}`);
const made = await py(['make', '--config', 'medium', '--dir', dir], 'make medium');
if (made.error) {
  console.log(JSON.stringify({ error: made.error }));
  process.exit(1);
}
const torchRuns = [];
const hfOut = join(dir, `pytorch-${device}.safetensors`);
for (const dtype of ['float32', ...(offers('dtype') ? ['bfloat16'] : [])]) {
  log(`PyTorch ${dtype} on ${device}`);
  const r = await py(
    ['run', '--dir', dir, '--device', device, '--dtype', dtype, '--threads', String(threads), '--repeats', String(repeats)].concat([
      '--decode-repeats',
      String(Math.min(repeats, 2)),
      '--new-tokens',
      String(newTokens),
      '--out',
      dtype === 'float32' ? hfOut : `${hfOut}.${dtype}`,
    ]),
    `pytorch ${dtype}`,
  );
  torchRuns.push({ dtype, ...r });
}
const torch32 = torchRuns[0];

log('vlmkit cold (graph build) + teacher-forced logits vs PyTorch');
const cold = await vl('cold', torch32.error ? {} : { hfOut }, 'vlmkit cold');
const runs = [];
for (const v of variants()) {
  log(`vlmkit ${v.label}`);
  // Each variant builds its own graphs (cache keys differ); the first run of a variant fills the cache.
  const r = await vl('run', { load: v.load, generate: v.generate }, `vlmkit ${v.label}`);
  runs.push({ label: v.label, dtype: v.dtype ?? 'float32', ...r });
}

// ---------------------------------------------------------------------------------------------------------------
// the table

const f = (x, d = 1) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(d) : '-');
const ratio = (a, b) => (typeof a === 'number' && typeof b === 'number' && b > 0 ? a / b : undefined);
const torchFor = (dtype) => torchRuns.find((t) => t.dtype === (dtype === 'float32' ? 'float32' : 'bfloat16') && !t.error);
const rows = [
  ...torchRuns.map((t) => ({
    system: `PyTorch ${t.dtype} (eager, sdpa)`,
    vision: t.vision_ms,
    prefill: t.prefill_ms,
    decode: t.decode_ms,
    step: t.decode_ms,
    mem: t.gpu_peak_reserved_mb ?? t.gpu_used_peak_mb,
    error: t.error,
  })),
  ...runs.map((r) => ({
    system: `vlmkit ${r.label}`,
    vision: r.vision_ms,
    prefill: r.prefill_ms,
    decode: r.decode_per_token_ms,
    step: r.decode_ms,
    mem: r.gpu_used_peak_mb,
    ref: torchFor(r.dtype),
    error: r.error,
  })),
];
const lines = [
  `GPU bench, medium ERNIE (392M, 1280-token prompt with one 448x448 image, ${newTokens} greedy tokens), device ${device}, ` +
    `medians of ${repeats}; ratios against PyTorch of the same dtype (bfloat16 for float16/bfloat16 vlmkit). decode ms/token: ` +
    'PyTorch the median step inside generate (synchronized), vlmkit (generate - vision - prefill) / (N - 1), whatever the loop; ' +
    'median step: per session run (the in-graph loop runs many tokens per run)',
  '',
  '| system | vision ms | prefill ms | decode ms/token | median step ms | device memory MB | vision / PT | prefill / PT | decode / PT |',
  '|---|---|---|---|---|---|---|---|---|',
  ...rows.map((r) =>
    r.error
      ? `| ${r.system} | failed: ${r.error.slice(0, 120).replaceAll('|', '/')} | | | | | | | |`
      : `| ${r.system} | ${f(r.vision)} | ${f(r.prefill)} | ${f(r.decode, 2)} | ${f(r.step, 2)} | ${f(r.mem, 0)} | ${f(ratio(r.vision, r.ref?.vision_ms), 2)} | ` +
        `${f(ratio(r.prefill, r.ref?.prefill_ms), 2)} | ${f(ratio(r.decode, r.ref?.decode_ms), 2)} |`,
  ),
];
const graph = runs.find((r) => r.label === 'float32, graph loop' && !r.error);
const host = runs.find((r) => r.label === 'float32, host loop' && !r.error);
const goals = {
  decode_graph_loop_ratio: ratio(graph?.decode_per_token_ms, torch32.decode_ms) ?? null,
  decode_host_loop_ratio: ratio(host?.decode_per_token_ms, torch32.decode_ms) ?? null,
  prefill_ratio: ratio((graph ?? host)?.prefill_ms, torch32.prefill_ms) ?? null,
};
const idsEqual = runs.filter((r) => !r.error && r.dtype === 'float32').map((r) => JSON.stringify(r.ids) === JSON.stringify(torch32.ids));
lines.push(
  '',
  `Goals (issue 11, float32 against PyTorch float32): decode with the in-graph loop <= 0.5x: ${f(goals.decode_graph_loop_ratio, 2)}` +
    ` (host loop ${f(goals.decode_host_loop_ratio, 2)}); prefill <= 0.8x: ${f(goals.prefill_ratio, 2)}.`,
  `Greedy ids equal to PyTorch's (float32 variants): ${idsEqual.join(', ') || '-'}; teacher-forced logits max |diff| ` +
    `${f(cold.logits_max_diff, 6)} of ${f(cold.logits_max_ref, 1)}, top-1 ${f(cold.teacher_forced_top1, 3)}; graph build (cold load) ${f(cold.load_cold_ms / 1e3, 1)} s.`,
  `Device: ${torch32.gpu ?? device}; vlmkit device reason: ${runs[0]?.device_reason ?? '-'}.`,
);
const table = lines.join('\n');
console.error(`\n${table}\n`);
const summary = {
  device,
  gpu: torch32.gpu ?? null,
  repeats,
  new_tokens: newTokens,
  goals,
  ids_equal: idsEqual,
  pytorch: torchRuns,
  cold,
  vlmkit: runs,
  table,
};
writeFileSync(outFile, `${JSON.stringify(summary, null, 1)}\n`);
console.log(JSON.stringify({ goals, ids_equal: idsEqual, out: outFile }));
