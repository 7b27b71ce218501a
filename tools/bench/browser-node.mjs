// The Node side of `pnpm bench:browser` (tools/bench/browser.mjs runs it, one child process per load so that
// each peak RSS is its own): the checkpoint loaded with loadPretrained on onnxruntime-node (CPU), the same
// options as the page's, then the same timed generates as the page (examples/web/src/bench.ts) and
// vlmkit_side.mjs `run`: one untimed generate, then `repeats` timed ones; vision, prefill and the median decode
// step of each, medians over the repeats. Prints one JSON line last.
//
//   node browser-node.mjs MODEL_DIR INPUTS CACHE_DIR JSON_OPTS
//
// JSON_OPTS: { threads, repeats, newTokens, quantize? }. The graph cache in CACHE_DIR is used as it is: empty for
// a first load (graphs built and written), filled by a previous process for a cached load.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadPretrained, readNamedTensors } from '../../packages/models/dist/index.js';

const [dirArg, inputsArg, cacheArg, optsArg] = process.argv.slice(2);
if (!optsArg) {
  process.stderr.write('usage: node tools/bench/browser-node.mjs MODEL_DIR INPUTS CACHE_DIR JSON_OPTS\n');
  process.exit(2);
}
const opts = JSON.parse(optsArg);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const vmHwmMb = () => {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'));
  return line ? Number(line.split(/\s+/)[1]) / 1024 : null;
};

const t0 = performance.now();
const model = await loadPretrained(resolve(dirArg), {
  device: 'cpu',
  cacheDir: resolve(cacheArg),
  ...(opts.quantize ? { quantize: opts.quantize } : {}),
  profile: { threads: opts.threads },
});
const loadMs = performance.now() - t0;
const loadPeakMb = vmHwmMb();
const inputs = await readNamedTensors(resolve(inputsArg));
const generate = () => model.generate(inputs, { maxNewTokens: opts.newTokens, eos: [] });
await generate();
const vision = [];
const prefill = [];
const decode = [];
const perToken = [];
const total = [];
let ids = [];
for (let r = 0; r < opts.repeats; r++) {
  const t = performance.now();
  const gen = await generate();
  const ms = performance.now() - t;
  total.push(ms);
  vision.push(gen.visionMs);
  prefill.push(gen.timings.prefillMs);
  decode.push(median(gen.timings.stepMs));
  perToken.push((ms - gen.visionMs - gen.timings.prefillMs) / Math.max(gen.tokens[0].length - 1, 1));
  ids = gen.tokens[0];
}
const peak = vmHwmMb();
await model.release();
console.log(
  JSON.stringify({
    device: model.device,
    deviceReason: model.deviceReason,
    load_ms: loadMs,
    timings: model.timings,
    vision_ms: median(vision),
    prefill_ms: median(prefill),
    decode_ms: median(decode),
    decode_per_token_ms: median(perToken),
    generate_ms: median(total),
    vision_runs_ms: vision,
    prefill_runs_ms: prefill,
    decode_runs_ms: decode,
    prompt_tokens: Number(inputs.input_ids.dims[1]),
    ids,
    load_peak_rss_mb: loadPeakMb,
    peak_rss_mb: peak,
  }),
);
