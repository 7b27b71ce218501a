// A/B of the generation loops on one device: the host loop (one decoder session run per token) against the
// in-graph decode loop (profile `loop: 'graph'`: an ONNX Loop making a chunk of tokens per run), both models loaded side
// by side and timed interleaved (the order rotated every repetition), so a shared machine's load hits all alike.
// Prints medians over the repetitions of: the prompt (generate's prefillMs: the prompt run and the first token),
// decode ms/token (generate's per-step timings; the in-graph loop's are each chunk's time over its tokens), the
// whole generate call per token, and whether the greedy ids are identical. Not a test; needs `pnpm build`.
// usage: node tools/bench/loop-ab.mjs --model DIR [--inputs IN.safetensors] [--device cpu|cuda] [--reps 3]
//        [--new-tokens 32] [--chunks 1,8,32] [--threads N] [--concat]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadPretrained, readNamedTensors } from '../../packages/models/dist/index.js';

const { values: o } = parseArgs({
  options: {
    model: { type: 'string' },
    inputs: { type: 'string' },
    device: { type: 'string', default: 'cpu' },
    reps: { type: 'string', default: '3' },
    'new-tokens': { type: 'string', default: '32' },
    chunks: { type: 'string', default: '1,8,32' },
    threads: { type: 'string' },
    concat: { type: 'boolean', default: false },
  },
});
if (!o.model) throw new Error('usage: loop-ab.mjs --model DIR [--inputs IN.safetensors] [--device cpu|cuda] [--reps 3] [--new-tokens 32]');
const dir = resolve(o.model);
const inputs = await readNamedTensors(o.inputs ?? join(dir, 'inputs.safetensors'));
const [reps, n] = [Number(o.reps), Number(o['new-tokens'])];
const chunks = o.chunks.split(',').map(Number);
const cacheDir = mkdtempSync(join(tmpdir(), 'vlmkit-loop-ab-'));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
// Each variant is a profile override (the load option `profile`: fields over the device's profile).
const load = (loop, extra = {}) =>
  loadPretrained(dir, {
    device: o.device,
    cacheDir,
    profile: { loop, ...extra, ...(o.threads ? { threads: Number(o.threads) } : {}) },
  });
// The host loop with its default KV cache ('append': no copy per step) and, with --concat, with 'concat' (each
// step returns past + new: the copy the in-graph loop's carried cache makes too; one more graph in the cache).
const models = {};
try {
  models.host = await load('host');
  models.graph = await load('graph');
  if (o.concat) models.hostConcat = await load('host', { kvCache: 'concat' });
  const variants = [{ name: 'host', model: models.host, options: {} }]
    .concat(o.concat ? [{ name: 'host, concat KV', model: models.hostConcat, options: {} }] : [])
    .concat(chunks.map((c) => ({ name: `graph, chunk ${c}`, model: models.graph, options: { loopChunk: c } })));
  const results = new Map(variants.map((v) => [v.name, { prompt: [], step: [], total: [], ids: undefined }]));
  for (let r = 0; r < reps; r++) {
    for (let k = 0; k < variants.length; k++) {
      const v = variants[(k + r) % variants.length];
      const t0 = performance.now();
      const g = await v.model.generate(inputs, { maxNewTokens: n, eos: [], ...v.options });
      const total = performance.now() - t0;
      const res = results.get(v.name);
      res.prompt.push(g.visionMs + g.timings.prefillMs);
      res.step.push(median(g.timings.stepMs));
      res.total.push(total / g.tokens[0].length);
      res.ids = JSON.stringify(g.tokens);
    }
  }
  const hostIds = results.get('host').ids;
  console.log(`${dir} on ${models.host.device}, ${n} new tokens, ${reps} repetitions (medians), interleaved`);
  console.log('loop             | vision+prompt ms | decode ms/token | generate ms/token | ids = host');
  for (const [name, res] of results) {
    const row = [name.padEnd(16), median(res.prompt).toFixed(0).padStart(16), median(res.step).toFixed(1).padStart(15)];
    console.log(`${row.join(' | ')} | ${median(res.total).toFixed(1).padStart(17)} | ${res.ids === hostIds}`);
  }
} finally {
  for (const m of Object.values(models)) await m.release();
  rmSync(cacheDir, { recursive: true, force: true });
}
