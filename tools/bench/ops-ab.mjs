// A/B of the decoder's op sets on one device: the standard ONNX ops against onnxruntime's com.microsoft fused
// kernels (models' `OPS_FIELDS`, the CLI's `--ops onnx|contrib`: the cpu or the cuda profile's decoder passes), both models loaded side by side and timed interleaved (the order swapped
// every repetition), so a shared machine's load hits both alike. Prints medians over the repetitions of the
// prompt (vision + prefill: generate's time to its first token) and of the median decode step (generate's own
// per-step timings), and whether the greedy ids are identical. Not a test; needs `pnpm build`.
// usage: node tools/bench/ops-ab.mjs --model DIR [--inputs IN.safetensors] [--device cpu|cuda] [--reps 3] [--new-tokens 16] [--threads N]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadPretrained, OPS_FIELDS, readNamedTensors } from '../../packages/models/dist/index.js';

const { values: o } = parseArgs({
  options: {
    model: { type: 'string' },
    inputs: { type: 'string' },
    device: { type: 'string', default: 'cpu' },
    reps: { type: 'string', default: '3' },
    'new-tokens': { type: 'string', default: '16' },
    threads: { type: 'string' },
  },
});
if (!o.model) throw new Error('usage: ops-ab.mjs --model DIR [--inputs IN.safetensors] [--device cpu|cuda] [--reps 3] [--new-tokens 16]');
const dir = resolve(o.model);
const inputs = await readNamedTensors(o.inputs ?? join(dir, 'inputs.safetensors'));
const [reps, n] = [Number(o.reps), Number(o['new-tokens'])];
const cacheDir = mkdtempSync(join(tmpdir(), 'vlmkit-ops-ab-'));
const OPS = ['onnx', 'contrib'];
const models = {};
for (const ops of OPS) {
  models[ops] = await loadPretrained(dir, {
    device: o.device,
    cacheDir,
    profile: { ...OPS_FIELDS[ops], ...(o.threads ? { threads: Number(o.threads) } : {}) },
  });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const t = Object.fromEntries(OPS.map((k) => [k, { prompt: [], decode: [], ids: undefined }]));
async function timed(m, maxNewTokens) {
  const t0 = performance.now();
  let first;
  const r = await m.generate(inputs, {
    maxNewTokens,
    eos: [],
    onToken: () => {
      first ??= performance.now() - t0;
    },
  });
  return { prompt: first, step: median(r.timings.stepMs), ids: r.tokens };
}
for (const ops of OPS) await timed(models[ops], 2); // warm-up: kernel choice, arenas
for (let r = 0; r < reps; r++) {
  for (const ops of r % 2 === 0 ? OPS : [...OPS].reverse()) {
    const run = await timed(models[ops], 1 + n);
    t[ops].prompt.push(run.prompt);
    t[ops].decode.push(run.step);
    t[ops].ids = run.ids;
  }
}
const S = inputs.input_ids.dims.at(-1);
console.log(`${dir}: ${S} prompt tokens, ${1 + n} new, ${reps} interleaved repetitions, device ${models.onnx.device}`);
console.log('| ops | prompt ms (vision + prefill) | decode ms/token |');
console.log('| --- | --- | --- |');
for (const ops of OPS) console.log(`| ${ops} | ${median(t[ops].prompt).toFixed(0)} | ${median(t[ops].decode).toFixed(1)} |`);
console.log(
  `contrib / onnx: prompt ${(median(t.contrib.prompt) / median(t.onnx.prompt)).toFixed(2)}, decode ${(median(t.contrib.decode) / median(t.onnx.decode)).toFixed(2)}; greedy ids identical: ${JSON.stringify(t.contrib.ids) === JSON.stringify(t.onnx.ids)}`,
);
for (const m of Object.values(models)) await m.release();
rmSync(cacheDir, { recursive: true, force: true });
