// Where ORT's com.microsoft MoE kernel pays off on CPU (issue 20): per checkpoint, the decoder with its routed
// experts as per-expert MatMuls (the cpu profile's passes without any MoE pass) against the same with --pass
// first ('moe-experts', or 'qmoe-experts' with --quantize int4). Each variant is timed by `vlmkit_side.mjs run`
// in its own child process (load from its own graph cache, one untimed generate, then --repeats: median prefill
// of the prompt and median decode ms/token); then one child loads both in turn and runs the prompt + the sparse
// variant's greedy ids teacher-forced: max |logits diff| over the generated positions, the max |logit|, and how
// many positions pick the same top-1. Checkpoints: `torch_side.py make` (--experts N varies the expert count).
// Not a test; needs `pnpm build`. Run it under the bench lock (tools/bench/README.md).
//
//   node tools/bench/moe-crossover.mjs --dirs D1,D2 --cache DIR [--pass moe-experts] [--quantize int4]
//        [--threads 2] [--repeats 3] [--new-tokens 32] [--keep-cache]
//   node tools/bench/moe-crossover.mjs logits DIR CACHE_A CACHE_B JSON_OPTS   (the child: prints one JSON line)
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = fileURLToPath(new URL('.', import.meta.url));
/** The cpu profile's decoder passes before issue 20 chose the MoE kernel by expert count. */
const SPARSE = ['append-attention', 'stored-layout'];

if (process.argv[2] === 'logits') {
  console.log(JSON.stringify(await logits(...process.argv.slice(3))));
  process.exit(0);
}

const { values: o } = parseArgs({
  options: {
    dirs: { type: 'string' },
    cache: { type: 'string' },
    pass: { type: 'string', default: 'moe-experts' },
    quantize: { type: 'string' },
    threads: { type: 'string', default: '2' },
    repeats: { type: 'string', default: '3' },
    'new-tokens': { type: 'string', default: '32' },
    'keep-cache': { type: 'boolean', default: false },
  },
});
if (!o.dirs || !o.cache) {
  console.error('usage: node tools/bench/moe-crossover.mjs --dirs D1,D2 --cache DIR [--pass moe-experts] [--quantize int4]');
  process.exit(2);
}
const variants = { sparse: SPARSE, fused: [o.pass, ...SPARSE] };
const base = { threads: Number(o.threads), repeats: Number(o.repeats), newTokens: Number(o['new-tokens']), quantize: o.quantize };
const optsOf = (passes) => ({ ...base, load: { profile: { decoderPasses: passes } } });

function child(args) {
  return new Promise((done, fail) => {
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.on('close', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0) fail(new Error(`${args.slice(0, 3).join(' ')}: exit ${code}\n${out.slice(-2000)}`));
      else done(JSON.parse(last));
    });
  });
}

const cpu = execFileSync('lscpu', { encoding: 'utf8' }).match(/Model name:\s*(.*)/)?.[1] ?? 'unknown';
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: here, encoding: 'utf8' }).trim();
console.log(`# ${o.pass} against per-expert MatMuls: ${cpu}, ${o.threads} threads, ${o.quantize ?? 'float32'}, commit ${commit}`);
console.log(`# medians of ${o.repeats} after one untimed run, ${o['new-tokens']} new tokens`);
console.log(
  '| checkpoint | experts (top-k) | prefill ms sparse / fused | ratio | decode ms sparse / fused | ratio | ids same | logits max diff (of max) | top-1 same |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
const rows = [];
for (const dir of o.dirs.split(',').map((d) => resolve(d))) {
  const info = JSON.parse(readFileSync(join(dir, 'bench.json'), 'utf8'));
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')).text_config;
  const experts = `${cfg.num_experts ?? cfg.num_local_experts ?? cfg.moe_num_experts} (${cfg.num_experts_per_tok ?? cfg.moe_k})`;
  const caches = {};
  const runs = {};
  for (const [name, passes] of Object.entries(variants)) {
    caches[name] = join(resolve(o.cache), `${basename(dir)}-${o.quantize ?? 'float32'}-${name}`);
    runs[name] = await child([join(here, 'vlmkit_side.mjs'), 'run', dir, caches[name], JSON.stringify(optsOf(passes))]);
  }
  const ids = runs.sparse.ids;
  const cmp = await child([
    fileURLToPath(import.meta.url),
    'logits',
    dir,
    caches.sparse,
    caches.fused,
    JSON.stringify({ ...base, ids, a: variants.sparse, b: variants.fused }),
  ]);
  const [s, f] = [runs.sparse, runs.fused];
  const row = {
    checkpoint: basename(dir),
    text_layers: info.text_layers,
    vision_layers: info.vision_layers,
    experts,
    prefill_ms: [s.prefill_ms, f.prefill_ms],
    prefill_ratio: f.prefill_ms / s.prefill_ms,
    decode_ms: [s.decode_ms, f.decode_ms],
    decode_ratio: f.decode_ms / s.decode_ms,
    ids_same: JSON.stringify(s.ids) === JSON.stringify(f.ids),
    peak_rss_mb: [s.peak_rss_mb, f.peak_rss_mb],
    ...cmp,
  };
  rows.push(row);
  console.log(
    `| ${row.checkpoint} | ${experts} | ${s.prefill_ms.toFixed(0)} / ${f.prefill_ms.toFixed(0)} | ${row.prefill_ratio.toFixed(2)} | ` +
      `${s.decode_ms.toFixed(1)} / ${f.decode_ms.toFixed(1)} | ${row.decode_ratio.toFixed(2)} | ${row.ids_same ? 'yes' : 'no'} | ` +
      `${cmp.logits_max_diff.toExponential(2)} (${cmp.logits_max_ref.toFixed(1)}) | ${cmp.top1_same}/${cmp.positions} |`,
  );
  if (!o['keep-cache']) for (const c of Object.values(caches)) rmSync(c, { recursive: true, force: true });
}
console.log(JSON.stringify({ cpu, commit, threads: base.threads, quantize: o.quantize ?? 'float32', pass: o.pass, rows }));

/** The prompt + `ids` teacher-forced on the graphs cached in `cacheA` and `cacheB`: their logits at the generated positions compared. */
async function logits(dir, cacheA, cacheB, optsArg) {
  const { Ernie45VL, Qwen3VL, readNamedTensors } = await import('../../packages/models/dist/index.js');
  const opts = JSON.parse(optsArg);
  const info = JSON.parse(readFileSync(join(dir, 'bench.json'), 'utf8'));
  const Model = { ernie: Ernie45VL, qwen3vl: Qwen3VL }[info.model];
  const inputs = await readNamedTensors(join(dir, 'inputs.safetensors'));
  const S = Number(inputs.input_ids.dims[1]);
  const fed = opts.ids.slice(0, -1);
  const extended = { ...inputs };
  for (const [name, fill] of [
    ['input_ids', null],
    ['attention_mask', 1],
    ['mm_token_type_ids', 0],
    ['moe_mm_token_type_ids', 0],
  ]) {
    const t = inputs[name];
    if (!t) continue;
    const data = new BigInt64Array(S + fed.length);
    data.set(t.data);
    fed.forEach((id, i) => {
      data[S + i] = BigInt(fill ?? id);
    });
    extended[name] = { dtype: 'int64', dims: [1, S + fed.length], data };
  }
  const rowsOf = async (cacheDir, passes) => {
    const model = await Model.fromPretrained(dir, {
      device: 'cpu',
      cacheDir,
      ...(opts.quantize ? { quantize: opts.quantize } : {}),
      profile: { decoderPasses: passes, threads: opts.threads },
    });
    const out = (await model.forward(extended)).logits;
    const V = out.dims.at(-1);
    const rows = out.data.slice((S - 1) * V, (S - 1 + opts.ids.length) * V);
    await model.release();
    return { rows, V };
  };
  const a = await rowsOf(cacheA, opts.a);
  const b = await rowsOf(cacheB, opts.b);
  let diff = 0;
  let ref = 0;
  let top1 = 0;
  for (let k = 0; k < opts.ids.length; k++) {
    let [ba, bb] = [0, 0];
    for (let v = 0; v < a.V; v++) {
      const [x, y] = [a.rows[k * a.V + v], b.rows[k * a.V + v]];
      diff = Math.max(diff, Math.abs(x - y));
      ref = Math.max(ref, Math.abs(x));
      if (x > a.rows[k * a.V + ba]) ba = v;
      if (y > b.rows[k * a.V + bb]) bb = v;
    }
    if (ba === bb) top1++;
  }
  return { logits_max_diff: diff, logits_max_ref: ref, top1_same: top1, positions: opts.ids.length };
}
