// Where a bf16 checkpoint computed in float32 can get its float32 weights on onnxruntime-node 1.29 (issue 18,
// docs/benchmarks.md "Published Granite ..."): (1) whether ORT's CPU EP has a bfloat16 MatMul / Gemm (one-op
// sessions), (2) how fast JavaScript makes a float32 copy of bf16 weights in a RAM-backed file that ORT could map
// (read, widen, write; --dir, default /dev/shm; the file is removed after). Needs `pnpm build`. Not part of the
// tests or CI.
//
//   node tools/bench/bf16-float32-copy.mjs [--gb 2] [--dir /dev/shm]
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Graph, serializeModel } from '../../packages/onnx-graph/dist/index.js';

const { values: o } = parseArgs({ options: { gb: { type: 'string', default: '2' }, dir: { type: 'string', default: '/dev/shm' } } });
const require = createRequire(join(process.cwd(), 'packages/runtime/package.json'));
const ort = require('onnxruntime-node');

for (const op of ['MatMul', 'Gemm']) {
  const g = new Graph();
  const [x, w] = [g.input('x', 'bfloat16', [4, 8]), g.input('w', 'bfloat16', [8, 8])];
  g.output(g.emit(op, [x, w], [{ dtype: 'bfloat16', shape: [4, 8] }])[0], 'y');
  try {
    await ort.InferenceSession.create((await serializeModel(g)).bytes);
    console.log(`${op} on bfloat16: the CPU EP has a kernel`);
  } catch (e) {
    console.log(`${op} on bfloat16: ${String(e.message).split('\n')[0].slice(0, 120)}`);
  }
}

const CHUNK = 32 << 20; // source bytes per step
const total = Number(o.gb) * 2 ** 30;
const work = mkdtempSync(join(tmpdir(), 'bf16-copy-'));
const src = join(work, 'weights.bf16');
const buf = Buffer.alloc(CHUNK);
for (let i = 0; i < buf.length; i += 2) buf.writeUInt16LE((i * 7919) & 0x7fff, i);
let fd = openSync(src, 'w');
for (let n = 0; n < total; n += CHUNK) writeSync(fd, buf);
closeSync(fd);
const dst = join(mkdtempSync(join(o.dir, 'bf16-copy-')), 'weights.f32');
const out = new Uint32Array(CHUNK / 2);
const t = { read: 0, widen: 0, write: 0 };
const t0 = performance.now();
fd = openSync(src, 'r');
const fo = openSync(dst, 'w');
for (;;) {
  let a = performance.now();
  const n = readSync(fd, buf, 0, CHUNK, null);
  if (n === 0) break;
  t.read += performance.now() - a;
  a = performance.now();
  const u16 = new Uint16Array(buf.buffer, buf.byteOffset, n / 2);
  for (let i = 0; i < u16.length; i++) out[i] = u16[i] << 16;
  t.widen += performance.now() - a;
  a = performance.now();
  writeSync(fo, new Uint8Array(out.buffer, 0, n * 2));
  t.write += performance.now() - a;
}
closeSync(fd);
closeSync(fo);
const ms = performance.now() - t0;
console.log(
  `${o.gb} GiB bf16 -> ${2 * Number(o.gb)} GiB float32 in ${o.dir}: ${(ms / 1e3).toFixed(2)} s (read ${(t.read / 1e3).toFixed(2)}, ` +
    `widen ${(t.widen / 1e3).toFixed(2)}, write ${(t.write / 1e3).toFixed(2)}), ${((2 * total) / 2 ** 30 / (ms / 1e3)).toFixed(2)} GiB/s of float32`,
);
rmSync(work, { recursive: true, force: true });
rmSync(join(dst, '..'), { recursive: true, force: true });
