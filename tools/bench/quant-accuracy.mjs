// Accuracy (and speed) of vlmkit's quantized decoder weights against float32, on the same checkpoint and inputs.
// Each mode runs in its own child process (its peak RSS is its own) with a private graph cache; the parent
// compares each mode's logits with float32's. Needs `pnpm build`. Not part of the tests or CI.
//
//   node tools/bench/quant-accuracy.mjs [--target DIR=INPUTS.safetensors ...] [--modes float32,int8,int4,...]
//        [--speed N] [--threads 2] [--json]
//
// Targets default to the fixtures (ernie-tiny: images, text-only; granite-tiny: anyres, batch-2). A mode is
// float32, int8 or int4, optionally with flags: `-sym` (symmetric, no zero points), `-acc0`/`-acc4`
// (MatMulNBits accuracy_level; default 4), `-nohead` (LM head left float), e.g. int4-sym-acc0.
// --speed N: also greedy-generate N tokens from the inputs (first batch row) and report prefill ms and the
// median decode ms/token (median of 3 runs).
// --noise DIR: also run float32 on DIR (the same model with perturbed weights, e.g. rounded to bf16) and compare
// it with the target's float32, as a noise floor: how far this model's logits move for a weight change that small.
//
// Per mode against float32, over the real (attention_mask 1) positions of all rows: max relative logits
// error max|q - f| / max|f|; mean relative error mean|q - f| / mean|f|; the lowest cosine of a row's
// last-token logits; teacher-forced top-1 agreement (argmax equal, every position of the given ids).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const models = join(root, 'packages/models/dist/index.js');

function parseMode(mode) {
  const [base, ...flags] = mode.split('-');
  if (base === 'float32') return undefined;
  if (base !== 'int8' && base !== 'int4') throw new Error(`mode '${mode}': expected float32, int8 or int4 with -sym/-acc<N>/-nohead`);
  const q = { bits: base === 'int8' ? 8 : 4 };
  for (const f of flags) {
    if (f === 'sym') q.symmetric = true;
    else if (f === 'nohead') q.lmHead = false;
    else if (/^acc[0-4]$/.test(f)) q.accuracyLevel = Number(f.slice(3));
    else throw new Error(`mode '${mode}': unknown flag '${f}'`);
  }
  return q;
}

function vmHwmMb() {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'));
  return line ? Number(line.split(/\s+/)[1]) / 1024 : Number.NaN;
}

// ---- child: one mode on one target -------------------------------------------------------------------------
async function child(dir, inputsPath, mode, outPath, speed, threads) {
  const { loadPretrained, readNamedTensors, writeNamedTensors } = await import(models);
  const cacheDir = mkdtempSync(join(tmpdir(), 'vlmkit-quant-'));
  try {
    const quantize = parseMode(mode);
    const t0 = performance.now();
    const model = await loadPretrained(dir, { device: 'cpu', profile: { threads }, cacheDir, ...(quantize ? { quantize } : {}) });
    const loadMs = performance.now() - t0;
    const inputs = await readNamedTensors(inputsPath);
    const out = await model.forwardNamed(inputs);
    await writeNamedTensors(outPath, { logits: out.logits });
    const result = { mode, load_ms: loadMs };
    if (speed > 0) {
      const first = {};
      for (const [k, t] of Object.entries(inputs)) first[k] = t;
      const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
      const prefill = [];
      const decode = [];
      for (let r = 0; r < 3; r++) {
        const gen = await model.generate(first, { maxNewTokens: speed, eos: [] });
        prefill.push(gen.timings.prefillMs);
        decode.push(median(gen.timings.stepMs));
      }
      Object.assign(result, { prefill_ms: median(prefill), decode_ms_per_token: median(decode) });
    }
    await model.release();
    result.peak_rss_mb = vmHwmMb();
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
}

// ---- parent ------------------------------------------------------------------------------------------------
function compare(q, f, dims, mask) {
  const [B, S, V] = dims;
  let maxDiff = 0;
  let maxRef = 0;
  let sumDiff = 0;
  let sumRef = 0;
  let agree = 0;
  let positions = 0;
  let minCos = 1;
  for (let b = 0; b < B; b++) {
    let last = -1;
    for (let s = 0; s < S; s++) {
      if (mask && mask[b * S + s] === 0n) continue;
      last = s;
      positions++;
      const base = (b * S + s) * V;
      let bq = 0;
      let bf = 0;
      for (let v = 0; v < V; v++) {
        const d = Math.abs(q[base + v] - f[base + v]);
        maxDiff = Math.max(maxDiff, d);
        maxRef = Math.max(maxRef, Math.abs(f[base + v]));
        sumDiff += d;
        sumRef += Math.abs(f[base + v]);
        if (q[base + v] > q[base + bq]) bq = v;
        if (f[base + v] > f[base + bf]) bf = v;
      }
      if (bq === bf) agree++;
    }
    if (last >= 0) {
      const base = (b * S + last) * V;
      let dot = 0;
      let nq = 0;
      let nf = 0;
      for (let v = 0; v < V; v++) {
        dot += q[base + v] * f[base + v];
        nq += q[base + v] ** 2;
        nf += f[base + v] ** 2;
      }
      minCos = Math.min(minCos, dot / Math.sqrt(nq * nf));
    }
  }
  return { max_rel: maxDiff / maxRef, mean_rel: sumDiff / sumRef, last_token_cosine: minCos, top1_agreement: agree / positions, positions };
}

async function parent() {
  const { values: o } = parseArgs({
    options: {
      target: { type: 'string', multiple: true },
      modes: { type: 'string', default: 'float32,int8,int4' },
      speed: { type: 'string', default: '0' },
      threads: { type: 'string', default: '2' },
      json: { type: 'boolean', default: false },
      noise: { type: 'string' },
    },
  });
  const fx = join(root, 'test-fixtures');
  const targets = (
    o.target ?? [
      `${fx}/ernie-tiny=${fx}/ernie-tiny/cases/images/inputs.safetensors`,
      `${fx}/ernie-tiny=${fx}/ernie-tiny/cases/text-only/inputs.safetensors`,
      `${fx}/granite-tiny=${fx}/granite-tiny/cases/anyres/inputs.safetensors`,
      `${fx}/granite-tiny=${fx}/granite-tiny/cases/batch-2/inputs.safetensors`,
    ]
  ).map((t) => {
    const [dir, inputs] = t.split('=');
    return { dir: resolve(dir), inputs: resolve(inputs ?? join(dir, 'inputs.safetensors')) };
  });
  const modes = o.modes.split(',');
  if (modes[0] !== 'float32') modes.unshift('float32');
  const { readNamedTensors } = await import(models);
  const work = mkdtempSync(join(tmpdir(), 'vlmkit-quant-acc-'));
  const rows = [];
  try {
    for (const t of targets) {
      const inputs = await readNamedTensors(t.inputs);
      const mask = inputs.attention_mask?.data;
      let ref;
      const runs = modes.map((mode) => ({ mode, dir: t.dir }));
      if (o.noise) runs.push({ mode: 'float32', dir: resolve(o.noise), label: `float32 on ${o.noise.split('/').pop()}` });
      for (const { mode, dir, label } of runs) {
        const outPath = join(work, `${mode}.safetensors`);
        const stdout = execFileSync(
          process.execPath,
          [fileURLToPath(import.meta.url), '--child', dir, t.inputs, mode, outPath, o.speed, o.threads],
          { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 },
        );
        const result = JSON.parse(stdout.trim().split('\n').pop());
        const logits = (await readNamedTensors(outPath)).logits;
        if (ref === undefined) ref = logits;
        const row = {
          target: `${t.dir.split('/').pop()} ${t.inputs.split('/').slice(-2, -1)[0]}`,
          ...result,
          ...(label ? { mode: label } : {}),
        };
        if (logits !== ref) Object.assign(row, compare(logits.data, ref.data, logits.dims, mask));
        rows.push(row);
        process.stderr.write(`[quant-accuracy] ${JSON.stringify(row)}\n`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ cpu, threads: Number(o.threads), rows })}\n`);
    return;
  }
  const f = (x, d = 4) =>
    x === undefined ? '' : typeof x === 'number' ? (Math.abs(x) < 1e-3 && x !== 0 ? x.toExponential(2) : x.toFixed(d)) : x;
  process.stdout.write(`CPU: ${cpu}, ${o.threads} threads\n\n`);
  process.stdout.write(
    '| target | mode | max rel | mean rel | last-token cos | top-1 agree | prefill ms | decode ms/tok | peak RSS MB |\n',
  );
  process.stdout.write('|---|---|---|---|---|---|---|---|---|\n');
  for (const r of rows) {
    process.stdout.write(
      `| ${r.target} | ${r.mode} | ${f(r.max_rel)} | ${f(r.mean_rel)} | ${f(r.last_token_cosine, 6)} | ${f(r.top1_agreement, 3)} | ${f(r.prefill_ms, 1)} | ${f(r.decode_ms_per_token, 2)} | ${f(r.peak_rss_mb, 0)} |\n`,
    );
  }
}

if (process.argv[2] === '--child') {
  const [dir, inputs, mode, out, speed, threads] = process.argv.slice(3);
  await child(dir, inputs, mode, out, Number(speed), Number(threads));
} else {
  await parent();
}
