// How onnxruntime-node takes a weight from external data: a memory-mapped data file beside the model, or a
// buffer passed in sessionOptions.externalData. One MatMul with a [K, N] float32 weight; each way in its own
// process, so that each peak RSS (VmHWM) is its own. Also says whether ORT uses the buffer in place or copies
// it: the buffer is changed after the session is created and the model run again.
//
//   node tools/bench/external-data-memory.mjs [--mb 256]     (needs packages built: pnpm build)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const ort = createRequire(join(here, '..', '..', 'packages', 'runtime', 'package.json'))('onnxruntime-node');
const { onnx } = await import(join(here, '..', '..', 'packages', 'onnx-graph', 'dist', 'index.js'));

const { values: o, positionals } = parseArgs({ options: { mb: { type: 'string', default: '256' } }, allowPositionals: true });
const K = 4096;
const N = Math.max(1, Math.round((Number(o.mb) * 2 ** 20) / (4 * K)));
const OFFSET = 4096;
const hwm = () => Math.round(Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024);
const rss = () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024);

function model() {
  const dims = (d) => ({ dim: d.map((v) => ({ dimValue: v })) });
  return onnx.ModelProto.encode(
    onnx.ModelProto.create({
      irVersion: 10,
      opsetImport: [{ domain: '', version: 21 }],
      graph: {
        name: 'g',
        node: [{ opType: 'MatMul', input: ['x', 'w'], output: ['y'] }],
        input: [{ name: 'x', type: { tensorType: { elemType: 1, shape: dims([1, K]) } } }],
        output: [{ name: 'y', type: { tensorType: { elemType: 1, shape: dims([1, N]) } } }],
        initializer: [
          {
            name: 'w',
            dataType: 1,
            dims: [K, N],
            dataLocation: 1,
            externalData: [
              { key: 'location', value: 'w.bin' },
              { key: 'offset', value: String(OFFSET) },
              { key: 'length', value: String(K * N * 4) },
            ],
          },
        ],
      },
    }),
  ).finish();
}

async function child(way, dir) {
  const options = { executionProviders: ['cpu'], enableMemPattern: false, extra: { session: { disable_prepacking: '1' } } };
  const before = rss();
  let buffer;
  const t0 = performance.now();
  let session;
  if (way === 'file') {
    session = await ort.InferenceSession.create(join(dir, 'm.onnx'), options);
  } else {
    buffer = readFileSync(join(dir, 'w.bin'));
    session = await ort.InferenceSession.create(readFileSync(join(dir, 'm.onnx')), {
      ...options,
      externalData: [{ path: 'w.bin', data: buffer }],
    });
  }
  const createMs = performance.now() - t0;
  const x = new ort.Tensor('float32', new Float32Array(K).fill(1), [1, K]);
  const y0 = (await session.run({ x })).y.data[0];
  const after = { rssAfterRunMB: rss(), peakMB: hwm() };
  let inPlace = 'n/a';
  if (buffer) {
    Buffer.from(new Float32Array(K * N).fill(2).buffer).copy(buffer, OFFSET);
    inPlace = (await session.run({ x })).y.data[0] !== y0 ? 'in place' : 'copied';
  }
  console.log(JSON.stringify({ way, createMs: Math.round(createMs), rssBeforeMB: before, ...after, buffer: inPlace }));
}

if (positionals[0] === 'child') {
  await child(positionals[1], positionals[2]);
} else {
  const dir = mkdtempSync(join(tmpdir(), 'vlmkit-extdata-'));
  try {
    writeFileSync(join(dir, 'm.onnx'), model());
    const w = Buffer.alloc(OFFSET + K * N * 4);
    new Float32Array(w.buffer, w.byteOffset + OFFSET, K * N).fill(1);
    writeFileSync(join(dir, 'w.bin'), w);
    console.log(`weight [${K}, ${N}] float32, ${((K * N * 4) / 2 ** 20).toFixed(0)} MiB; onnxruntime-node ${ort.env.versions.node}`);
    for (const way of ['file', 'memory', 'file', 'memory']) {
      console.log(
        execFileSync(process.execPath, [fileURLToPath(import.meta.url), 'child', way, dir])
          .toString()
          .trim(),
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
