// One linear layer, y = x W^T with W [N, K], on onnxruntime-node (default) or onnxruntime-web's WASM backend (run
// in Node: the kernels a page runs; one thread there, Node being no cross-origin isolated page): float32 MatMul against
// MatMulNBits int8/int4 at accuracy levels 0 and 4 (quantized by onnx-graph's quantizeLinearPass, as a load
// quantizes), ORT's prepacking on and off; rounds interleaved so that a noisy machine slows every variant alike.
// Shows why a quantized session prepacks (models README, "Quantized weights") and why int4 decodes slower than
// float32 in a page (docs/benchmarks.md, "The medium ERNIE in the browser"). Needs `pnpm build`. Not part of the
// tests or CI.
//
//   node tools/bench/quant-matmul.mjs [--runtime node|web] [--k 1024] [--n 4096] [--m 1,512] [--rounds 7] [--threads 2]
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { applyPasses, Graph, modelBytes, nn, quantizeLinearPass, tensorFromArray, Weights } from '../../packages/onnx-graph/dist/index.js';

const { values: o } = parseArgs({
  options: {
    runtime: { type: 'string', default: 'node' },
    k: { type: 'string', default: '1024' },
    n: { type: 'string', default: '4096' },
    m: { type: 'string', default: '1,512' },
    rounds: { type: 'string', default: '7' },
    threads: { type: 'string', default: '2' },
  },
});
if (!['web', 'node'].includes(o.runtime)) throw new Error(`--runtime must be web or node, got '${o.runtime}'`);
const ort =
  o.runtime === 'web'
    ? await import('../../packages/runtime/node_modules/onnxruntime-web/dist/ort.node.min.mjs')
    : (await import('../../packages/runtime/node_modules/onnxruntime-node/dist/index.js')).default;
const [K, N, rounds, threads] = [Number(o.k), Number(o.n), Number(o.rounds), Number(o.threads)];
const w = new Float32Array(N * K).map(() => (Math.random() - 0.5) * 0.1);
const weights = Weights.from({ 'fc.weight': tensorFromArray('float32', [N, K], w) });

async function session(quantize, prepack) {
  const g = new Graph();
  g.output(nn.linear(g, g.input('x', 'float32', ['m', K]), weights, 'fc', { bias: false, out: N }), 'y');
  if (quantize) applyPasses(g, [quantizeLinearPass(quantize)]);
  const ops = g.snapshot().nodes.map((n) => n.opType);
  if (quantize && !ops.includes('MatMulNBits')) throw new Error(`expected MatMulNBits for ${JSON.stringify(quantize)}, found ${ops}`);
  const opts = {
    executionProviders: [o.runtime === 'web' ? 'wasm' : 'cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    logSeverityLevel: 3,
  };
  if (!prepack) opts.extra = { session: { disable_prepacking: '1' } };
  return ort.InferenceSession.create(await modelBytes(g), opts);
}

const variants = [['float32', undefined]];
for (const bits of [8, 4]) for (const acc of [0, 4]) variants.push([`int${bits} acc${acc}`, { bits, accuracyLevel: acc }]);
const rows = [];
for (const prepack of [true, false])
  for (const [name, q] of variants) rows.push({ name: `${name}${prepack ? '' : ' no-prepack'}`, s: await session(q, prepack), t: {} });
const ms = o.m.split(',').map(Number);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const m of ms) {
  const x = new ort.Tensor(
    'float32',
    new Float32Array(m * K).map(() => Math.random() - 0.5),
    [m, K],
  );
  const reps = Math.max(1, Math.round(64 / m));
  for (const r of rows) await r.s.run({ x }); // warm-up
  for (let round = 0; round < rounds; round++) {
    for (const r of rows) {
      const t0 = performance.now();
      for (let i = 0; i < reps; i++) await r.s.run({ x });
      r.t[m] = r.t[m] ?? [];
      r.t[m].push((performance.now() - t0) / reps);
    }
  }
}
const runtime = o.runtime === 'web' ? 'onnxruntime-web (WASM, in Node)' : 'onnxruntime-node (CPU)';
process.stdout.write(
  `${cpus()[0]?.model}, ${runtime}, ${threads} threads, K=${K} N=${N}: median ms per run (${rounds} interleaved rounds)\n`,
);
process.stdout.write(`| variant | ${ms.map((m) => `M=${m}`).join(' | ')} |\n|---|${ms.map(() => '---|').join('')}\n`);
for (const r of rows) process.stdout.write(`| ${r.name} | ${ms.map((m) => median(r.t[m]).toFixed(3)).join(' | ')} |\n`);
