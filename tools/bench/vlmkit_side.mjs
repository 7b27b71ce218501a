// vlmkit side of `pnpm bench` (tools/bench/bench.mjs runs it, one child process per measurement so that each
// peak RSS is its own). Prints one JSON line last.
//
//   node vlmkit_side.mjs cold   DIR CACHE_DIR JSON_OPTS   load with an empty graph cache (builds and saves the
//        graphs), then a teacher-forced forward over the prompt + PyTorch's greedy ids: its logits at the 64
//        generated positions against PyTorch's step logits (JSON_OPTS.hfOut).
//   node vlmkit_side.mjs run    DIR CACHE_DIR JSON_OPTS   load from the cache, then greedy generate
//        (vision, prefill, ms/token) JSON_OPTS.repeats times; VmHWM of this process.
//   node vlmkit_side.mjs curves DIR CACHE_DIR JSON_OPTS   vision against patches, prefill and decode against length.
//   node vlmkit_side.mjs load   DIR CACHE_DIR JSON_OPTS   load only (the cache as it is): its time and VmHWM, or the
//        error's code and message when the load is refused (what a refused load had allocated by then).
//
// JSON_OPTS: { threads, repeats, newTokens, quantize?, hfOut?, points?, device?, load?, generate? }. `quantize` is
// passed to fromPretrained only when set (bench.mjs sets it only when the models package offers the option);
// `device` (default 'cpu') and the objects `load` / `generate` (extra fromPretrained / generate options, e.g. the
// compute dtype or profile fields such as the decode loop: tools/gpu/bench.mjs) likewise. `threads` is the
// profile's (over a profile `load` names or gives).
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ernie45VL, Granite4Vision, PROFILES, Qwen3VL, readNamedTensors } from '../../packages/models/dist/index.js';

const [mode, dirArg, cacheArg, optsArg] = process.argv.slice(2);
const dir = resolve(dirArg);
const cacheDir = resolve(cacheArg);
const opts = JSON.parse(optsArg ?? '{}');
const info = JSON.parse(readFileSync(join(dir, 'bench.json'), 'utf8'));
const Model = { ernie: Ernie45VL, granite: Granite4Vision, qwen3vl: Qwen3VL }[info.model];
const { profile, ...extraLoad } = opts.load ?? {};
const loadOptions = {
  device: opts.device ?? 'cpu',
  cacheDir,
  ...(opts.quantize ? { quantize: opts.quantize } : {}),
  ...extraLoad,
  profile: { ...(typeof profile === 'string' ? PROFILES[profile] : profile), threads: opts.threads },
};
const generateOptions = opts.generate ?? {};

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function statusMb(field) {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return line ? Number(line.split(/\s+/)[1]) / 1024 : Number.NaN;
}
const vmHwmMb = () => statusMb('VmHWM');
/** The resident set now, split: anonymous memory (ORT's arena, packed weights) and mapped file pages (page cache). */
const rssNow = () => ({ rss_anon_mb: statusMb('RssAnon'), rss_file_mb: statusMb('RssFile') });

async function load() {
  const t0 = performance.now();
  const model = await Model.fromPretrained(dir, loadOptions);
  return { model, ms: performance.now() - t0 };
}

/** The prompt with `extra` tokens appended (text tokens: mask 1, token types 0). */
function extend(inputs, extra) {
  const out = { ...inputs };
  const S = Number(inputs.input_ids.dims[1]);
  const grow = (name, values) => {
    const t = inputs[name];
    if (!t) return;
    const data = new BigInt64Array(S + extra.length);
    data.set(t.data);
    values.forEach((v, i) => {
      data[S + i] = BigInt(v);
    });
    out[name] = { dtype: 'int64', dims: [1, S + extra.length], data };
  };
  grow('input_ids', extra);
  grow(
    'attention_mask',
    extra.map(() => 1),
  );
  grow(
    'mm_token_type_ids',
    extra.map(() => 0),
  );
  grow(
    'moe_mm_token_type_ids',
    extra.map(() => 0),
  );
  return out;
}

async function cold() {
  rmSync(cacheDir, { recursive: true, force: true });
  const { model, ms } = await load();
  const result = { system: 'vlmkit', mode: 'cold', quantize: opts.quantize ?? 'float32', load_cold_ms: ms, timings: model.timings };
  if (opts.hfOut) {
    const hf = await readNamedTensors(opts.hfOut);
    const ids = Array.from(hf.ids.data, Number);
    const ref = hf.logits.data;
    const V = hf.logits.dims[1];
    const inputs = await readNamedTensors(join(dir, 'inputs.safetensors'));
    const S = Number(inputs.input_ids.dims[1]);
    const out = await model.forward(extend(inputs, ids.slice(0, -1)));
    const got = out.logits.data;
    let diff = 0;
    let scale = 0;
    let top1 = 0;
    for (let k = 0; k < ids.length; k++) {
      const base = (S - 1 + k) * V;
      let best = 0;
      for (let v = 0; v < V; v++) {
        const r = ref[k * V + v];
        diff = Math.max(diff, Math.abs(got[base + v] - r));
        scale = Math.max(scale, Math.abs(r));
        if (got[base + v] > got[base + best]) best = v;
      }
      if (best === ids[k]) top1++;
    }
    Object.assign(result, { logits_max_diff: diff, logits_max_ref: scale, teacher_forced_top1: top1 / ids.length });
  }
  await model.release();
  result.peak_rss_mb = vmHwmMb();
  return result;
}

async function run() {
  const { model, ms } = await load();
  const inputs = await readNamedTensors(join(dir, 'inputs.safetensors'));
  const vision = [];
  const prefill = [];
  const decode = [];
  const total = [];
  let ids;
  // Decode per token also as (generate - vision - prefill) / (N - 1): all the time after the first token, over the
  // tokens after it, from the same run; one definition whatever the decode loop (the in-graph loop runs many tokens
  // per session run, so its per-step times are per chunk).
  const perToken = [];
  // One untimed run first, on every device (torch_side.py does the same): the medians are steady-state times,
  // without the first run's one-time costs (ORT's arena growth, page faults on mapped weights, cuBLAS/cuDNN plans).
  await model.generate(inputs, { maxNewTokens: opts.newTokens, eos: [], ...generateOptions });
  for (let r = 0; r < opts.repeats; r++) {
    const t0 = performance.now();
    const gen = await model.generate(inputs, { maxNewTokens: opts.newTokens, eos: [], ...generateOptions });
    const ms = performance.now() - t0;
    total.push(ms);
    vision.push(gen.visionMs);
    prefill.push(gen.timings.prefillMs);
    decode.push(median(gen.timings.stepMs));
    perToken.push((ms - gen.visionMs - gen.timings.prefillMs) / Math.max(gen.tokens[0].length - 1, 1));
    ids = gen.tokens[0];
  }
  const peak = vmHwmMb();
  const after = rssNow();
  await model.release();
  return {
    system: 'vlmkit',
    mode: 'run',
    quantize: opts.quantize ?? 'float32',
    threads: opts.threads,
    load_ms: ms,
    timings: model.timings,
    vision_ms: median(vision),
    prefill_ms: median(prefill),
    decode_ms: median(decode),
    decode_per_token_ms: median(perToken),
    generate_ms: median(total),
    device: model.device,
    device_reason: model.deviceReason,
    load_options: opts.load ?? {},
    generate_options: generateOptions,
    vision_runs_ms: vision,
    prefill_runs_ms: prefill,
    decode_runs_ms: decode,
    peak_rss_mb: peak,
    ...after,
    ids,
  };
}

/** Random numbers from a fixed seed (the curves need inputs of many sizes, not PyTorch's exact ones). */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function curves() {
  const { model } = await load();
  const rand = rng(7);
  const res = { vision: [], prefill: [], decode: [] };
  const int64 = (vals, dims) => ({ dtype: 'int64', dims, data: BigInt64Array.from(vals.map(BigInt)) });
  const ids = info.model === 'ernie' ? { start: 251, patch: 250, end: 252 } : undefined;
  for (const [h, w] of opts.points.grids) {
    // One image of h x w patches in a minimal prompt; generate 1 token to get the vision time alone.
    const n = (h * w) / 4;
    const prompt = [1, ids.start, ...new Array(n).fill(ids.patch), ids.end, 5];
    const types = prompt.map((t) => (t === ids.patch ? 1 : 0));
    const moe = prompt.map((t) => (t === ids.patch || t === ids.start || t === ids.end ? 1 : 0));
    const px = new Float32Array(h * w * 588);
    for (let i = 0; i < px.length; i++) px[i] = rand() * 2 - 1;
    const inputs = {
      input_ids: int64(prompt, [1, prompt.length]),
      attention_mask: int64(
        prompt.map(() => 1),
        [1, prompt.length],
      ),
      mm_token_type_ids: int64(types, [1, prompt.length]),
      moe_mm_token_type_ids: int64(moe, [1, prompt.length]),
      pixel_values: { dtype: 'float32', dims: [h * w, 588], data: px },
      image_grid_thw: int64([1, h, w], [1, 3]),
    };
    const ts = [];
    for (let r = 0; r < opts.repeats; r++) ts.push((await model.generate(inputs, { maxNewTokens: 1, eos: [] })).visionMs);
    res.vision.push({ patches: h * w, ms: median(ts) });
  }
  const [lo, hi] = info.text_token_range;
  for (const n of opts.points.lengths) {
    const prompt = [1, ...Array.from({ length: n - 1 }, () => lo + Math.floor(rand() * (hi - lo)))];
    const zeros = prompt.map(() => 0);
    const inputs = {
      input_ids: int64(prompt, [1, n]),
      attention_mask: int64(
        prompt.map(() => 1),
        [1, n],
      ),
      ...(info.model === 'ernie' ? { mm_token_type_ids: int64(zeros, [1, n]), moe_mm_token_type_ids: int64(zeros, [1, n]) } : {}),
    };
    const pre = [];
    let steps = [];
    for (let r = 0; r < opts.repeats; r++) {
      const gen = await model.generate(inputs, { maxNewTokens: r === 0 ? opts.newTokens : 1, eos: [] });
      pre.push(gen.timings.prefillMs);
      if (r === 0) steps = gen.timings.stepMs;
    }
    res.prefill.push({ tokens: n, ms: median(pre) });
    res.decode.push({ context: n, ms: median(steps) });
    process.stderr.write(`${JSON.stringify({ progress: n })}\n`);
  }
  await model.release();
  return res;
}

async function loadOnly() {
  try {
    const { model, ms } = await load();
    const after = rssNow();
    await model.release();
    return { system: 'vlmkit', mode: 'load', load_ms: ms, timings: model.timings, peak_rss_mb: vmHwmMb(), ...after };
  } catch (e) {
    return { system: 'vlmkit', mode: 'load', error_code: e.code ?? null, error_message: String(e.message ?? e), peak_rss_mb: vmHwmMb() };
  }
}

const modes = { cold, run, curves, load: loadOnly };
if (!modes[mode]) {
  process.stderr.write(`usage: node ${fileURLToPath(import.meta.url)} cold|run|curves|load DIR CACHE_DIR JSON_OPTS\n`);
  process.exit(2);
}
console.log(JSON.stringify(await modes[mode]()));
