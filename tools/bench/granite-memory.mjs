#!/usr/bin/env node
// Peak RSS and load times of vlmkit on a Granite 4 Vision checkpoint (e.g. one made by make_granite_full.py):
// load (cold or cached, as the cache directory is), then one 768x768 image as 2x2 tiles + base in a prompt of
// PROMPT tokens, greedy generation of NEW_TOKENS. Prints one JSON line: load / build / session ms, vision,
// prefill and decode ms, VmHWM after load and at the end (MB), RssFile / RssAnon at the end.
//
//   pnpm build && node tools/bench/granite-memory.mjs DIR CACHE_DIR [PROMPT=768] [NEW_TOKENS=8] [THREADS=2]
import { readFileSync } from 'node:fs';
import { Granite4Vision, packPlan } from '../../packages/models/dist/index.js';
import { float32, int64 } from '../../packages/runtime/dist/index.js';

const [dir, cacheDir, promptArg, newArg, threadsArg] = process.argv.slice(2);
if (!dir || !cacheDir) {
  console.error('usage: granite-memory.mjs DIR CACHE_DIR [PROMPT=768] [NEW_TOKENS=8] [THREADS=2]');
  process.exit(2);
}
const promptLen = Number(promptArg ?? 768);
const newTokens = Number(newArg ?? 8);
const threads = Number(threadsArg ?? 2);

function mem() {
  const s = readFileSync('/proc/self/status', 'utf8');
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
  return { hwmMB: Math.round(kb('VmHWM') / 1024), anonMB: Math.round(kb('RssAnon') / 1024), fileMB: Math.round(kb('RssFile') / 1024) };
}

const t0 = performance.now();
const model = await Granite4Vision.fromPretrained(dir, { cacheDir, profile: { threads, logger: (m) => console.error(`vlmkit: ${m}`) } });
const loadMs = performance.now() - t0;
const afterLoad = mem();
const cfg = model.config;
const S = cfg.vision.imageSize;
const size = [2 * S, 2 * S];
const side = (S / cfg.vision.patchSize) * 0.5;
const plan = packPlan([size], cfg.pinpoints, S, side, cfg.imageNewline);
const tiles = plan.tilesPerImage[0];
const nImage = plan.indices.length;
const C = cfg.vision.numChannels;
const pix = new Float32Array(tiles * C * S * S);
let seed = 7;
for (let i = 0; i < pix.length; i++) {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  pix[i] = (seed / 2 ** 31) * 2 - 1;
}
const textTokens = Math.max(2, promptLen - nImage);
const ids = [cfg.tokens.bos ?? 1];
for (let i = 1; i < textTokens; i++) ids.push(1000 + ((i * 7919) % 50000));
ids.splice(4, 0, ...Array(nImage).fill(cfg.tokens.image));
const inputs = {
  input_ids: int64(ids, [1, ids.length]),
  pixel_values: float32(pix, [1, tiles, C, S, S]),
  image_sizes: int64(size, [1, 2]),
};
let steps = 0;
let prefillAt = 0;
const t1 = performance.now();
const out = await model.generate(inputs, {
  maxNewTokens: newTokens,
  eos: [],
  onToken: () => {
    if (steps++ === 0) prefillAt = performance.now();
  },
});
const end = performance.now();
const visionMs = out.visionMs;
console.log(
  JSON.stringify({
    dir,
    layers: cfg.text.numHiddenLayers,
    promptTokens: ids.length,
    imageTokens: nImage,
    loadMs: Math.round(loadMs),
    timings: Object.fromEntries(Object.entries(model.timings).map(([k, v]) => [k, Math.round(v)])),
    visionMs: Math.round(visionMs),
    prefillMs: Math.round(prefillAt - t1 - visionMs),
    decodeMsPerToken: Math.round((end - prefillAt) / Math.max(1, steps - 1)),
    tokens: out.tokens[0],
    afterLoad,
    end: mem(),
  }),
);
await model.release();
