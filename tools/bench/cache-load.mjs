#!/usr/bin/env node
// One load of ERNIE-4.5-VL from a graph cache, for the graph cache's figures (docs/graph-cache.md): prints
// {"ms", "hwm", "rssAnon", "rssFile"} (load time; VmHWM, RssAnon, RssFile in MB after the load). Run it twice on
// a fresh cache directory for a first and a cached load.
//
//   node tools/bench/cache-load.mjs <checkpoint> <cacheDir> [float32|int8|int4] [tree root, default this repo]
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const [checkpoint, cacheDir, mode = 'float32', root = resolve(import.meta.dirname, '../..')] = process.argv.slice(2);
const { Ernie45VL } = await import(`${root}/packages/models/dist/index.js`);
const t0 = performance.now();
const model = await Ernie45VL.fromPretrained(checkpoint, {
  device: 'cpu',
  reference: 'hf',
  cacheDir,
  ...(mode !== 'float32' ? { quantize: mode } : {}),
  profile: { logger: () => {} },
});
const ms = performance.now() - t0;
const status = readFileSync('/proc/self/status', 'utf8');
const mb = (key) => Math.round(Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)[1]) / 1024);
await model.release();
console.log(JSON.stringify({ ms: Math.round(ms), hwm: mb('VmHWM'), rssAnon: mb('RssAnon'), rssFile: mb('RssFile') }));
