// ERNIE-4.5-VL: vlmkit (onnxruntime-node, CPU) against HF transformers 5.17 (PyTorch, CPU) in the same run.
// usage: node tools/bench/ernie-bench.mjs [DIR=/tmp/vlmkit-bench-ernie] [NEW_TOKENS=16] [THREADS=2]
// Needs `pnpm build` and the Python env of tools/fixtures/README.md (.venv-ref). Not part of the tests.
import { execFileSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ernie45VL, readNamedTensors } from '../../packages/models/dist/index.js';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const dir = resolve(process.argv[2] ?? '/tmp/vlmkit-bench-ernie');
const newTokens = Number(process.argv[3] ?? 16);
const threads = Number(process.argv[4] ?? 2);
const python = join(root, '.venv-ref/bin/python');

const hf = JSON.parse(
  execFileSync(python, [join(root, 'tools/bench/ernie_hf.py'), dir, String(newTokens), String(threads)], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .at(-1),
);

for (const f of readdirSync(dir)) if (f.startsWith('vlmkit-')) rmSync(join(dir, f));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
let t0 = performance.now();
const cold = await Ernie45VL.fromPretrained(dir, { device: 'cpu', threads });
const coldMs = performance.now() - t0;
await cold.release();
t0 = performance.now();
const model = await Ernie45VL.fromPretrained(dir, { device: 'cpu', threads });
const warmMs = performance.now() - t0;
const inputs = await readNamedTensors(join(dir, 'inputs.safetensors'));
const fwd = [];
let out;
for (let i = 0; i < 3; i++) {
  t0 = performance.now();
  out = await model.forward(inputs);
  fwd.push(performance.now() - t0);
}
const ref = (await readNamedTensors(join(dir, 'hf_logits.safetensors'))).logits.data;
let diff = 0;
let scale = 0;
out.logits.data.forEach((v, i) => {
  diff = Math.max(diff, Math.abs(v - ref[i]));
  scale = Math.max(scale, Math.abs(ref[i]));
});
t0 = performance.now();
const gen = await model.generate(inputs, { maxNewTokens: newTokens, eos: [] });
const genMs = performance.now() - t0;
await model.release();

const rows = [
  ['load (first: build graphs + save + sessions)', hf.load_s * 1e3, coldMs],
  ['load (cached .onnx)', hf.load_s * 1e3, warmMs],
  ['forward, no cache (median of 3)', hf.forward_s * 1e3, median(fwd)],
  [`generate ${newTokens} tokens (vision + prefill + decode)`, hf.generate_s * 1e3, genMs],
];
console.log(`ERNIE-4.5-VL bench: ${(hf.params / 1e6).toFixed(1)}M params, ${hf.patches} patches, seq ${hf.seq}, ${threads} threads, CPU`);
console.log('| step | HF PyTorch ms | vlmkit ms | HF / vlmkit |');
console.log('| --- | --- | --- | --- |');
for (const [name, a, b] of rows) console.log(`| ${name} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${(a / b).toFixed(2)} |`);
console.log(
  `decode: ${median(gen.timings.stepMs).toFixed(1)} ms/token median (vlmkit), prefill ${gen.timings.prefillMs.toFixed(0)} ms, vision ${gen.visionMs.toFixed(0)} ms`,
);
console.log(
  `logits vs HF: max |diff| / max |ref| = ${(diff / scale).toExponential(2)}; greedy ids ${JSON.stringify(gen.tokens[0]) === JSON.stringify(hf.generated) ? 'identical' : `DIFFER: ${gen.tokens[0]} vs ${hf.generated}`}`,
);
