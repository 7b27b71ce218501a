// Throughput of the first-load quantizer (onnx-graph's quantizeRows, what `quantize` runs on every decoder
// weight of a checkpoint): one bf16 weight of normal random values (std 0.02, as the bench's checkpoints), int4 /
// int8, asymmetric / symmetric, block 32, one thread. Prints MB/s of bf16 checkpoint bytes (median of --repeats
// after one untimed). Run it under the bench lock after `pnpm build`:
//
//   flock /tmp/bench.lock node tools/bench/quant-throughput.mjs [--rows 2560] [--cols 12288] [--repeats 5]
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { quantizeRows } from '../../packages/onnx-graph/dist/quant-kernel.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '2560' },
    cols: { type: 'string', default: '12288' },
    repeats: { type: 'string', default: '5' },
  },
});
const [n, k, repeats] = [Number(values.rows), Number(values.cols), Number(values.repeats)];

// Normal weights by Box-Muller from a fixed LCG, truncated to bf16.
const bits = new Uint16Array(n * k);
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
let s = 12345;
const next = () => {
  s = (Math.imul(s, 1103515245) + 12345) >>> 0;
  return s;
};
for (let i = 0; i < bits.length; i++) {
  const a = (next() + 1) / 4294967297;
  f32[0] = 0.02 * Math.sqrt(-2 * Math.log(a)) * Math.cos((2 * Math.PI * next()) / 4294967296);
  bits[i] = u32[0] >>> 16;
}

const mb = bits.byteLength / 1e6;
console.log(`${cpus()[0]?.model}, one thread; [${n}, ${k}] bf16 weight, ${mb.toFixed(0)} MB; median of ${repeats}`);
for (const o of [
  { bits: 4, blockSize: 32, symmetric: false },
  { bits: 8, blockSize: 32, symmetric: false },
  { bits: 4, blockSize: 32, symmetric: true },
]) {
  const times = [];
  for (let r = 0; r <= repeats; r++) {
    const t0 = performance.now();
    quantizeRows({ dtype: 'bfloat16', data: bits }, n, k, o);
    if (r > 0) times.push(performance.now() - t0);
  }
  times.sort((x, y) => x - y);
  const ms = times[times.length >> 1];
  console.log(`int${o.bits}${o.symmetric ? ' symmetric' : ''}: ${(mb / (ms / 1e3)).toFixed(0)} MB/s (${ms.toFixed(0)} ms)`);
}
