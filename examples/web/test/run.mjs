#!/usr/bin/env node
// pnpm test:browser: the packages in headless Chromium against the same checks in Node.
//   1. builds the workspace packages (turbo), then the page with Vite from their dist (browser condition;
//      the build fails on any Node built-in or native addon) and prints the bundle's size;
//   2. serves the page and test-fixtures/ from 127.0.0.1 (server.mjs);
//   3. launches Debian's chromium through playwright-core (nothing downloads a browser), drives harness.html,
//      and compares every result with Node's, computed here in the same run;
//   4. launches it again with WebGPU flags and runs the checks on WebGPU when an adapter exists.
// Exits 1 on any failure; writes test-results.json (vitest's counts) for .ci/run's summary.
//
//   node examples/web/test/run.mjs [--skip-build]   # VLMKIT_CHROMIUM overrides /usr/bin/chromium
//   node examples/web/test/run.mjs --serve          # build, then only serve the page and the fixtures (Ctrl-C ends)
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bundleSizes, formatSizes } from './bundle-size.mjs';
import { Report, StepError } from './report.mjs';
import { startServer } from './server.mjs';

const WEB = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const REPO = resolve(WEB, '../..');
const FIXTURES = join(REPO, 'test-fixtures');
const { values: args } = parseArgs({
  options: { 'skip-build': { type: 'boolean', default: false }, serve: { type: 'boolean', default: false } },
});
/** A check that has not answered after this long is reported as hung (the page is then closed). */
const CHECK_LIMIT_MS = 180_000;
/** WebGPU in headless Chromium: flag sets tried in order until one gives an adapter. */
const WEBGPU_VARIANTS = [
  ['--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-angle=swiftshader', '--use-vulkan=swiftshader'],
  ['--enable-unsafe-webgpu', '--enable-features=Vulkan,WebGPU', '--use-webgpu-adapter=swiftshader', '--use-vulkan=swiftshader'],
  ['--enable-unsafe-webgpu', '--use-angle=vulkan', '--enable-features=Vulkan,VulkanFromANGLE', '--ignore-gpu-blocklist'],
];

const report = new Report();
const started = performance.now();
const seconds = (t) => `${((performance.now() - t) / 1000).toFixed(1)} s`;

/** Runs a command; throws with its output's tail when it fails. */
function run(cmd, argv, cwd = REPO) {
  const res = spawnSync(cmd, argv, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (res.error) throw new StepError(`${cmd} ${argv.join(' ')}: ${res.error.message}`);
  if (res.status !== 0) {
    const tail = `${res.stdout}\n${res.stderr}`.trim().split('\n').slice(-40).join('\n');
    throw new StepError(`\`${cmd} ${argv.join(' ')}\` exited with ${res.status ?? res.signal}:\n${tail}`);
  }
}

async function build() {
  let t = performance.now();
  run('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@vlmkit/web-demo^...', '--output-logs=errors-only']);
  run(join(REPO, 'node_modules/.bin/tsc'), ['-p', join(WEB, 'tsconfig.checks.json')]);
  console.log(`built the packages and the Node side of the checks (${seconds(t)})`);
  t = performance.now();
  const { build: viteBuild } = await import('vite');
  // The plugin's message lists every offending import; Rolldown's stack under it says nothing more.
  await viteBuild({ configFile: join(WEB, 'vite.config.ts'), logLevel: 'silent' }).catch((err) => {
    throw new StepError(`vite build: ${err.message}`);
  });
  console.log(`built the page with Vite (${seconds(t)}); no Node built-ins or native addons in its module graph`);
}

/** The executable playwright-core launches: $VLMKIT_CHROMIUM, else Debian's chromium. */
function chromiumPath() {
  const path = process.env.VLMKIT_CHROMIUM ?? '/usr/bin/chromium';
  if (!existsSync(path)) {
    throw new StepError(
      `no Chromium at ${path}: install Debian's package (\`apt-get install -y chromium\`, as root) or set VLMKIT_CHROMIUM to a Chromium binary`,
    );
  }
  return path;
}

/** page.evaluate of one harness entry, bounded in time so that a hung page fails the run instead of stalling it. */
async function call(page, name, ...params) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} did not answer within ${CHECK_LIMIT_MS / 1000} s`)), CHECK_LIMIT_MS);
  });
  try {
    return await Promise.race([page.evaluate(([n, p]) => globalThis.vlmkitHarness[n](...p), [name, params]), limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** Opens harness.html in a fresh browser; page errors and console errors are reported with the check they hit. */
async function openHarness(chromium, url, extraArgs) {
  const args = ['--disable-dev-shm-usage', ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), ...extraArgs];
  const browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args });
  const page = await browser.newPage();
  const errors = [];
  // Every console line, for checks that read ORT's own log (they empty it first).
  const log = [];
  page.on('pageerror', (err) => errors.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    log.push(msg.text());
    // The browser logs every 404 as an error; a reader's probe for an optional file is one.
    if (msg.type() === 'error' && !/status of 404/.test(msg.text())) errors.push(`console: ${msg.text()}`);
  });
  try {
    await page.goto(`${url}/harness.html`);
    await page.waitForFunction(() => globalThis.vlmkitHarness !== undefined, undefined, { timeout: 20_000 });
  } catch (err) {
    await browser.close();
    throw new StepError(`harness.html did not start: ${err.message}${errors.map((e) => `\n  ${e}`).join('')}`);
  }
  return { browser, page, errors, log };
}

/** --serve: the built demo and harness with test-fixtures/ under /fixtures/, until Ctrl-C. */
async function serve() {
  const server = await startServer({ '/fixtures/': FIXTURES, '/': join(WEB, 'dist') }, (line) => console.log(line));
  console.log(`demo:    ${server.url}/index.html  (checkpoint URL: ${server.url}/fixtures/ernie-tiny/)`);
  console.log(`harness: ${server.url}/harness.html`);
  await new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
}

/** The page's errors, each distinct one once (ORT logs a failing kernel at every run), at most 8. */
function reportPageErrors(errors) {
  // ORT's log lines carry ANSI colours and a timestamp.
  const ansi = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
  const plain = errors.map((e) => e.replace(ansi, '').replace(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ /, ''));
  const distinct = [...new Set(plain)];
  for (const e of distinct.slice(0, 8)) report.info(e);
  if (distinct.length > 8) report.info(`(${distinct.length - 8} more distinct errors in the page)`);
}

async function main() {
  if (!args['skip-build']) await build();
  if (args.serve) return serve();
  const sizes = await bundleSizes(join(WEB, 'dist'));
  for (const line of formatSizes(sizes)) report.info(`bundle ${line}`);

  const { chromium } = await import('playwright-core');
  // Imported once built: they import the packages' dist/ and the checks compiled to dist-node/.
  const { checks } = await import('./checks.mjs');
  const { demoCheck } = await import('./demo-check.mjs');
  const server = await startServer({ '/fixtures/': FIXTURES, '/': join(WEB, 'dist') }, (line) => report.info(`server: ${line}`));
  const browsers = [];
  try {
    const wasm = await openHarness(chromium, server.url, []);
    browsers.push(wasm.browser);
    const info = await call(wasm.page, 'info');
    report.info(`${info.userAgent}; cross-origin isolated: ${info.crossOriginIsolated}; WASM threads: ${info.wasmThreads}`);
    await checks({ report, call: (name, ...p) => call(wasm.page, name, ...p), device: 'wasm', fixtures: FIXTURES, pageLog: wasm.log });
    await demoCheck(report, wasm.browser, server.url, FIXTURES, CHECK_LIMIT_MS);
    reportPageErrors(wasm.errors);
    if (wasm.errors.some((e) => e.startsWith('page error'))) report.check('no uncaught errors in the page (wasm)', false);

    let gpu;
    const messages = [];
    for (const variant of WEBGPU_VARIANTS) {
      const opened = await openHarness(chromium, server.url, variant);
      browsers.push(opened.browser);
      const probe = await call(opened.page, 'probeWebGpu');
      messages.push(`${variant.join(' ')}: ${probe.message}`);
      if (probe.adapter) {
        gpu = opened;
        break;
      }
      await opened.browser.close();
    }
    for (const m of messages) report.info(`WebGPU ${m}`);
    if (gpu) {
      await checks({ report, call: (name, ...p) => call(gpu.page, name, ...p), device: 'webgpu', fixtures: FIXTURES, pageLog: gpu.log });
      reportPageErrors(gpu.errors);
    } else {
      report.skip('WebGPU checks', `no adapter in headless Chromium (${messages.at(-1)})`);
    }
  } finally {
    await Promise.allSettled(browsers.map((b) => b.close()));
    await server.close();
  }
}

// Whatever happens, the browsers and the server are closed (main's finally) and the counts are written.
try {
  await main();
} catch (err) {
  report.error('test:browser', err, { stack: true });
}
if (args.serve && report.failed === 0) process.exit(0);
const [passed, failed, skipped] = ['pass', 'fail', 'skip'].map((s) => report.count(s));
const counts = { numPassedTests: passed, numFailedTests: failed, numPendingTests: skipped };
await writeFile(join(WEB, 'test-results.json'), `${JSON.stringify(counts)}\n`);
console.log(`test:browser: ${passed} passed, ${failed} failed, ${skipped} skipped (${seconds(started)})`);
process.exit(failed > 0 ? 1 : 0);
