// Continuous batching (@vlmkit/models createEngine): aggregate decode tokens/s at 1, 4, 8 ... concurrent requests
// against one, on a checkpoint directory. Not a test; prints one JSON object last.
//
//   node tools/bench/engine.mjs --model DIR [--cache-dir DIR] [--concurrency 1,4,8] [--new-tokens 32]
//        [--quantize int4] [--dtype float32] [--threads N] [--profile cpu|cuda]
//
// Requests: DIR/inputs.safetensors (the bench checkpoints' prompt) when present, else the processor's chat of a
// text prompt and test-fixtures' photo. All N start at once (their vision + prefill run one after another, then
// they decode together); eos is off so every request makes --new-tokens. Aggregate decode tokens/s is measured
// over the window where all N decode: from the last request's first token to the first request's last token,
// the tokens every request made in it over its length. ms/step is that window over its decode steps; decoderRunMs
// the median decoder run of a step (the engine's own work per step is the difference).
import { execSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createEngine, loadPretrained, PROFILES, readNamedTensors } from '../../packages/models/dist/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: a } = parseArgs({
  options: {
    model: { type: 'string' },
    'cache-dir': { type: 'string' },
    concurrency: { type: 'string', default: '1,4,8' },
    'new-tokens': { type: 'string', default: '32' },
    quantize: { type: 'string' },
    dtype: { type: 'string' },
    threads: { type: 'string' },
    profile: { type: 'string', default: 'cpu' },
  },
});
if (!a.model) {
  console.error('usage: node tools/bench/engine.mjs --model DIR [--concurrency 1,4,8] [--new-tokens 32] [--quantize int4]');
  process.exit(2);
}
const dir = resolve(a.model);
const levels = a.concurrency.split(',').map(Number);
const newTokens = Number(a['new-tokens']);

function cpuName() {
  try {
    const line = execSync('lscpu', { encoding: 'utf8' })
      .split('\n')
      .find((l) => l.startsWith('Model name:'));
    if (line) return line.slice('Model name:'.length).trim();
  } catch {}
  return cpus()[0]?.model ?? 'unknown';
}

const t0 = performance.now();
const model = await loadPretrained(dir, {
  device: 'cpu',
  cacheDir: a['cache-dir'] ? resolve(a['cache-dir']) : mkdtempSync(join(tmpdir(), 'vlmkit-engine-bench-')),
  ...(a.quantize ? { quantize: a.quantize } : {}),
  ...(a.dtype ? { dtype: a.dtype } : {}),
  profile: { ...PROFILES[a.profile], ...(a.threads ? { threads: Number(a.threads) } : {}) },
});
const loadMs = performance.now() - t0;

const inputsFile = join(dir, 'inputs.safetensors');
const inputs = existsSync(inputsFile)
  ? await readNamedTensors(inputsFile)
  : await (await model.processor()).processChat(
      [
        {
          role: 'user',
          content: [
            { type: 'image', path: join(root, 'test-fixtures/processors/images/photo.jpg') },
            { type: 'text', text: 'Describe this image.' },
          ],
        },
      ],
      { addGenerationPrompt: true },
    );
const promptTokens = inputs.input_ids.dims[1];

const quantile = (xs, q) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

/** N requests at once: each request's token times, then the window where all N decode. */
async function measure(n) {
  const engine = await createEngine(model, { maxBatch: n });
  const start = performance.now();
  const times = Array.from({ length: n }, () => []);
  const results = await Promise.all(
    times.map((t) => engine.generate(inputs, { maxNewTokens: newTokens, eos: [], onToken: () => void t.push(performance.now()) })),
  );
  await engine.close();
  const from = Math.max(...times.map((t) => t[0]));
  const to = Math.min(...times.map((t) => t.at(-1)));
  const inWindow = times.reduce((k, t) => k + t.filter((x) => x > from && x <= to).length, 0);
  const seconds = (to - from) / 1000;
  const ttft = times.map((t) => t[0] - start);
  return {
    concurrency: n,
    decodeTokensPerSecond: inWindow / seconds,
    msPerStep: (to - from) / (inWindow / n),
    // The decoder run alone (timings.stepMs: every step of every request, all at batch n here).
    decoderRunMs: quantile(
      results.flatMap((r) => r.timings.stepMs),
      0.5,
    ),
    stepsInWindow: inWindow / n,
    timeToFirstTokenMs: { p50: quantile(ttft, 0.5), p99: quantile(ttft, 0.99) },
    visionPlusPrefillMs: quantile(
      results.map((r) => r.visionMs + r.timings.prefillMs),
      0.5,
    ),
  };
}

// A first request warms the sessions (first-run allocations) before anything is timed.
await measure(1);
const runs = [];
for (const n of levels) runs.push(await measure(n));
const one = runs.find((r) => r.concurrency === 1) ?? (await measure(1));
for (const r of runs) r.speedup = r.decodeTokensPerSecond / one.decodeTokensPerSecond;
await model.release();
console.log(
  JSON.stringify(
    {
      cpu: cpuName(),
      cores: cpus().length,
      model: dir,
      modelType: model.modelType,
      options: { quantize: a.quantize ?? null, dtype: a.dtype ?? 'float32', profile: a.profile, threads: a.threads ?? null },
      promptTokens,
      newTokens,
      loadMs: Math.round(loadMs),
      runs,
    },
    null,
    2,
  ),
);
