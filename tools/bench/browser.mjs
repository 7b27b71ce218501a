#!/usr/bin/env node
// `pnpm bench:browser`: a checkpoint in headless Chromium (onnxruntime-web, WASM, threads with cross-origin
// isolation) next to the same checkpoint in Node (onnxruntime-node, CPU) on this machine, same load options,
// same prompt, same measurements (tools/bench/README.md, "`pnpm bench:browser`"). Not a test; CI does not run it.
//   1. builds the packages (turbo) and the web demo with Vite (examples/web: its bench.html page);
//   2. Node: a first load in a fresh process with an empty graph cache in a temp dir (graphs built and
//      written), then one untimed and `--repeats` timed generates; a second process loads from that cache and
//      does the same (tools/bench/browser-node.mjs);
//   3. serves the built page, the checkpoint directory and the prompt's directory read-only on 127.0.0.1 with
//      COOP/COEP (examples/web/test/server.mjs), launches /usr/bin/chromium through playwright-core and runs
//      the same load and generates in the page (examples/web/src/bench.ts; no graph cache in a page: every load
//      builds its graphs); the renderer's peak RSS from /proc (its pid from the DevTools protocol);
//   4. prints the table (markdown) and writes the whole result to --out (JSON).
//
//   flock /tmp/bench.lock nice -n -15 node tools/bench/browser.mjs [--model DIR] [--inputs FILE] ...
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const WEB = join(REPO, 'examples/web');
/** vite and playwright-core are the web demo's dev dependencies: imported as examples/web resolves them. */
const fromWeb = (name) => import(pathToFileURL(createRequire(join(WEB, 'package.json')).resolve(name)).href);

const { values: o } = parseArgs({
  options: {
    cache: { type: 'string', default: join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'vlmkit-bench') },
    model: { type: 'string' },
    inputs: { type: 'string' },
    quantize: { type: 'string', default: 'int4' },
    threads: { type: 'string', default: '2' },
    'new-tokens': { type: 'string', default: '64' },
    repeats: { type: 'string', default: '3' },
    'skip-build': { type: 'boolean', default: false },
    'skip-node': { type: 'boolean', default: false },
    'skip-browser': { type: 'boolean', default: false },
    'mem-floor-mb': { type: 'string', default: '1500' },
    out: { type: 'string' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (o.help) {
  const readme = readFileSync(join(REPO, 'tools/bench/README.md'), 'utf8');
  process.stdout.write(readme.split('## `pnpm bench:browser`')[1]?.split('\n## ')[0] ?? '');
  process.exit(0);
}

// The medium ERNIE as `pnpm bench` makes it in its cache (torch_side.py make: random weights, the 1280-token prompt).
const modelDir = resolve(o.model ?? join(o.cache, 'ernie-medium'));
const inputsFile = resolve(o.inputs ?? join(modelDir, 'inputs.safetensors'));
const opts = {
  threads: Number(o.threads),
  repeats: Number(o.repeats),
  newTokens: Number(o['new-tokens']),
  ...(o.quantize === 'float32' ? {} : { quantize: quantizeArg(o.quantize) }),
};
/** --quantize: a mode name, or a QuantizeRequest as JSON (e.g. '{"bits":4,"accuracyLevel":1}': float32 compute). */
function quantizeArg(v) {
  if (['int8', 'int4'].includes(v)) return v;
  try {
    if (v.startsWith('{')) return JSON.parse(v);
  } catch {}
  fail(`--quantize must be float32, int8, int4 or a QuantizeRequest as JSON, got '${v}'`);
}
for (const [name, v] of [
  ['--threads', opts.threads],
  ['--repeats', opts.repeats],
  ['--new-tokens', opts.newTokens],
]) {
  if (!Number.isInteger(v) || v < 1) fail(`${name} must be a positive integer, got ${v}`);
}
for (const f of [join(modelDir, 'config.json'), inputsFile]) {
  if (!existsSync(f))
    fail(`no ${f}: \`pnpm bench --cache ${o.cache}\` makes the medium checkpoint there, or give --model DIR (--inputs FILE)`);
}

const log = (msg) => process.stderr.write(`[bench:browser] ${msg}\n`);
function fail(msg) {
  process.stderr.write(`bench:browser: ${msg}\n`);
  process.exit(2);
}
const sh = (cmd, args) => execFileSync(cmd, args, { cwd: REPO, encoding: 'utf8' }).trim();

/** Runs a build step; exits with its output's tail when it fails. */
function step(cmd, args) {
  const res = spawnSync(cmd, args, { cwd: REPO, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (res.status !== 0)
    fail(`\`${cmd} ${args.join(' ')}\` failed:\n${`${res.stdout}\n${res.stderr}`.trim().split('\n').slice(-30).join('\n')}`);
}

async function build() {
  const t = performance.now();
  step('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@vlmkit/web-demo^...', '--output-logs=errors-only']);
  const { build: viteBuild } = await fromWeb('vite');
  await viteBuild({ configFile: join(WEB, 'vite.config.ts'), logLevel: 'silent' });
  log(`built the packages and the page (${((performance.now() - t) / 1000).toFixed(0)} s)`);
}

const statusKb = (pid, field) => {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${field}:`));
    return line ? Number(line.split(/\s+/)[1]) : 0;
  } catch {
    return 0;
  }
};
const memAvailableMb = () => Number(/MemAvailable:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) / 1024;

/** One Node child (browser-node.mjs); its last stdout line is the result. A watchdog keeps the machine's memory. */
function nodeChild(cacheDir) {
  return new Promise((done) => {
    const args = [join(REPO, 'tools/bench/browser-node.mjs'), modelDir, inputsFile, cacheDir, JSON.stringify(opts)];
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let killed;
    p.stdout.on('data', (d) => {
      out += d;
    });
    const watch = setInterval(() => {
      if (!killed && memAvailableMb() < Number(o['mem-floor-mb'])) {
        killed = `killed: the machine had under ${o['mem-floor-mb']} MB available`;
        p.kill('SIGKILL');
      }
    }, 200);
    p.on('close', (code, signal) => {
      clearInterval(watch);
      const last = out.trim().split('\n').at(-1) ?? '';
      try {
        done(JSON.parse(last));
      } catch {
        done({ error: killed ?? `exited with ${code ?? signal}: ${last.slice(0, 400)}` });
      }
    });
  });
}

async function nodeSide() {
  const cacheDir = mkdtempSync(join(tmpdir(), 'vlmkit-bench-browser-'));
  try {
    log('Node: first load (empty graph cache) + generates');
    const first = await nodeChild(cacheDir);
    if (first.error) return { first };
    log('Node: cached load (second process) + generates');
    const cached = await nodeChild(cacheDir);
    return { first, cached };
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
}

async function browserSide() {
  const chromiumPath = process.env.VLMKIT_CHROMIUM ?? '/usr/bin/chromium';
  if (!existsSync(chromiumPath)) fail(`no Chromium at ${chromiumPath}: apt-get install -y chromium (as root), or set VLMKIT_CHROMIUM`);
  const { startServer } = await import('../../examples/web/test/server.mjs');
  const playwright = await fromWeb('playwright-core');
  const chromium = playwright.chromium ?? playwright.default.chromium;
  const server = await startServer({ '/bench-model/': modelDir, '/bench-inputs/': dirname(inputsFile), '/': join(WEB, 'dist') }, (line) =>
    log(`server: ${line}`),
  );
  const args = ['--disable-dev-shm-usage', ...(process.getuid?.() === 0 ? ['--no-sandbox'] : [])];
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args });
  let watch;
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('console', (msg) => {
      // The browser logs every 404 as an error; a reader's probe for an optional file is one.
      if (msg.type() === 'error') {
        if (!/status of 404/.test(msg.text())) errors.push(msg.text());
      } else log(`page: ${msg.text()}`);
    });
    await page.goto(`${server.url}/bench.html`);
    await page.waitForFunction(() => globalThis.vlmkitBench !== undefined, undefined, { timeout: 30_000 });
    const info = await page.evaluate(() => globalThis.vlmkitBench.info());
    // The renderers' pids (DevTools protocol); their peak RSS (VmHWM) is read before the browser closes.
    const cdp = await browser.newBrowserCDPSession();
    const renderers = async () =>
      (await cdp.send('SystemInfo.getProcessInfo')).processInfo.filter((p) => p.type === 'renderer').map((p) => p.id);
    const pids = new Set(await renderers());
    let killed;
    watch = setInterval(() => {
      if (!killed && memAvailableMb() < Number(o['mem-floor-mb'])) {
        killed = `the machine had under ${o['mem-floor-mb']} MB available: browser closed`;
        browser.close();
      }
    }, 200);
    log(`page: ${info.userAgent}; cross-origin isolated: ${info.crossOriginIsolated}; loading ${basename(modelDir)}`);
    const run = {
      model: `${server.url}/bench-model/`,
      inputs: `${server.url}/bench-inputs/${basename(inputsFile)}`,
      ...opts,
    };
    let result;
    try {
      result = await page.evaluate((r) => globalThis.vlmkitBench.run(r), run);
    } catch (err) {
      return { error: killed ?? err.message, errors: errors.slice(0, 8) };
    }
    let second;
    try {
      second = await page.evaluate((r) => globalThis.vlmkitBench.load(r), run);
    } catch (err) {
      second = { error: killed ?? err.message };
    }
    let read;
    try {
      read = await page.evaluate((r) => globalThis.vlmkitBench.read(r), run);
    } catch (err) {
      read = { error: killed ?? err.message };
    }
    for (const pid of await renderers()) pids.add(pid);
    const rendererPeakMb = Math.max(...[...pids].map((pid) => statusKb(pid, 'VmHWM') / 1024));
    return {
      ...result,
      second_load: second,
      checkpoint_read: read,
      chromium: browser.version(),
      renderer_peak_rss_mb: rendererPeakMb,
      page_errors: errors.slice(0, 8),
    };
  } finally {
    clearInterval(watch);
    await browser.close().catch(() => {});
    await server.close();
  }
}

const mb = (bytes) => bytes / 2 ** 20;
const fmt = (x, digits = 0) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(digits));

/** One table row: load, vision, prefill and decode throughput, peak memory. */
function row(label, r, memory) {
  const prefillTps = (r.prompt_tokens / r.prefill_ms) * 1000;
  return `| ${label} | ${fmt(r.load_ms / 1000, 1)} s | ${fmt(r.vision_ms)} ms | ${fmt(prefillTps, 1)} (${fmt(r.prefill_ms)} ms) | ${fmt(1000 / r.decode_ms, 1)} (${fmt(r.decode_ms, 1)} ms) | ${memory} |`;
}

function table(env, page, node) {
  const lines = [
    `${env.cpu}, ${opts.threads} threads, ${env.chromium ?? 'Chromium n/a'}, Node ${process.version}, commit ${env.commit}${env.dirty ? ' (uncommitted changes in packages/ or examples/web)' : ''}, ${env.date}`,
    `${basename(modelDir)}, quantize ${o.quantize}, prompt ${page?.prompt_tokens ?? node.first?.prompt_tokens} tokens, ${opts.newTokens} new tokens, medians of ${opts.repeats} after one untimed generate`,
    '',
    '| run | load | vision | prefill tokens/s | decode tokens/s (median step) | peak memory |',
    '|---|---|---|---|---|---|',
  ];
  if (page && !page.error) {
    const mem = `renderer ${fmt(page.renderer_peak_rss_mb)} MB RSS (VmHWM); WASM heap ${fmt(mb(page.wasm_heap_bytes))} MB of ${fmt(mb(page.wasm_heap_max_bytes))} MB`;
    lines.push(row(`Chromium, WASM, ${page.wasmThreads} threads (first load: fresh profile, no graph cache)`, page, mem));
  }
  if (page?.second_load && !page.second_load.error) {
    const l = page.second_load;
    lines.push(
      `| Chromium, second load in the same page (${l.timings.buildMs < page.timings.buildMs / 4 ? 'page graph cache' : 'built again'}) | ${fmt(l.load_ms / 1000, 1)} s | | | | WASM heap ${fmt(mb(l.wasm_heap_bytes))} MB |`,
    );
  }
  if (page?.checkpoint_read && !page.checkpoint_read.error) {
    const r = page.checkpoint_read;
    lines.push(
      `| Chromium, the checkpoint's tensors read alone (HTTP, 127.0.0.1) | ${fmt(r.read_ms / 1000, 1)} s (${fmt(mb(r.read_bytes) / (r.read_ms / 1000))} MB/s) | | | | |`,
    );
  }
  if (node.first && !node.first.error)
    lines.push(
      row('Node, onnxruntime-node CPU, first load (empty graph cache)', node.first, `${fmt(node.first.peak_rss_mb)} MB RSS (VmHWM)`),
    );
  if (node.cached && !node.cached.error)
    lines.push(row('Node, cached load (second process)', node.cached, `${fmt(node.cached.peak_rss_mb)} MB RSS (VmHWM)`));
  if (page && !page.error && node.first && !node.first.error) {
    const n = node.first;
    const ratio = (a, b) => fmt(a / b, 2);
    lines.push(
      `| page / Node (first load) | ${ratio(page.load_ms, n.load_ms)}x | ${ratio(page.vision_ms, n.vision_ms)}x | ${ratio(n.prefill_ms, page.prefill_ms)}x | ${ratio(n.decode_ms, page.decode_ms)}x | ${ratio(page.renderer_peak_rss_mb, n.peak_rss_mb)}x |`,
    );
    const same = JSON.stringify(page.ids) === JSON.stringify(n.ids);
    const first = page.ids.findIndex((id, i) => id !== n.ids[i]);
    lines.push('', same ? `Greedy ids: identical (${page.ids.length} tokens).` : `Greedy ids differ, first at step ${first}.`);
  }
  if (page && !page.error) {
    lines.push(
      `Page: crossOriginIsolated ${page.crossOriginIsolated}, ort.env.wasm.numThreads ${page.wasmThreads}; ${page.deviceReason}. ` +
        `WASM heap after load ${fmt(mb(page.wasm_heap_after_load_bytes))} MB, at the end ${fmt(mb(page.wasm_heap_bytes))} MB; ` +
        `measureUserAgentSpecificMemory ${page.ua_memory_bytes === null ? 'n/a' : `${fmt(mb(page.ua_memory_bytes))} MB`}.`,
    );
  }
  for (const [name, r] of [
    ['page', page],
    ['page second load', page?.second_load],
    ['page checkpoint read', page?.checkpoint_read],
    ['Node first', node.first],
    ['Node cached', node.cached],
  ]) {
    if (r?.error) lines.push(`${name}: FAILED: ${r.error}${(r.errors ?? []).map((e) => `\n  ${e}`).join('')}`);
  }
  return lines.join('\n');
}

const env = {
  date: `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  commit: sh('git', ['rev-parse', '--short', 'HEAD']),
  dirty: sh('git', ['status', '--porcelain', '--', 'packages', 'examples/web']) !== '',
  cpu: (/Model name:\s*(.+)/.exec(sh('lscpu', []))?.[1] ?? 'unknown CPU').trim(),
  loadavg: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
};
if (!o['skip-build']) await build();
const node = o['skip-node'] ? {} : await nodeSide();
const page = o['skip-browser'] ? undefined : await browserSide();
env.chromium = page?.chromium ? `Chromium ${page.chromium}` : undefined;
env.loadavgAfter = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const md = table(env, page, node);
console.log(md);
log(`load average before ${env.loadavg}, after ${env.loadavgAfter}`);
const result = { env, options: { model: modelDir, inputs: inputsFile, quantize: o.quantize, ...opts }, page, node };
if (o.out) writeFileSync(o.out, `${JSON.stringify(result, null, 2)}\n`);
if (o.json) console.log(JSON.stringify(result));
const failed = [page, node.first, node.cached].some((r) => r?.error);
process.exit(failed ? 1 : 0);
