// `pnpm bench --serve`: `vlmkit serve` (a child process on 127.0.0.1) under concurrent streaming requests over
// HTTP (fetch, server-sent events), each with its own image (PNG data URL) and text. Two arrival patterns per
// concurrency N: a burst (N requests at once) and a closed loop (N clients, each sending requests back to back,
// their starts spread over one request's latency). Reports aggregate decode tokens/s against one stream, time to
// first token p50 / p99, and one request's vision + prefill alone (tools/bench/engine.mjs, in-process). Options:
// tools/bench/README.md, "pnpm bench --serve".
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { promptMaker, serveCopy } from './serve-inputs.mjs';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const here = join(root, 'tools/bench');
const log = (msg) => process.stderr.write(`[serve-bench] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const OPTIONS = {
  model: { type: 'string' },
  cache: { type: 'string', default: join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'vlmkit-bench') },
  'from-cache': { type: 'string' },
  concurrency: { type: 'string', default: '1,4,8,16' },
  closed: { type: 'string', default: '8' },
  requests: { type: 'string', default: '3' },
  modes: { type: 'string', default: 'float32,int4' },
  patterns: { type: 'string', default: 'burst,closed' },
  'new-tokens': { type: 'string', default: '64' },
  'prompt-tokens': { type: 'string', default: '1280' },
  'image-size': { type: 'string', default: '448' },
  plot: { type: 'string', default: join(root, 'docs/benchmarks/serve-throughput.png') },
  'node-args': { type: 'string', default: '' },
  json: { type: 'boolean', default: false },
};

const quantile = (xs, q) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.max(0, Math.ceil(q * s.length) - 1)];
};

function cpuName() {
  const line = execFileSync('lscpu', { encoding: 'utf8' })
    .split('\n')
    .find((l) => l.startsWith('Model name:'));
  return line?.slice('Model name:'.length).trim() ?? 'unknown';
}

function freePort() {
  return new Promise((done, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => done(port));
    });
  });
}

/** The medium checkpoint of `pnpm bench` (torch_side.py make, built once), hard-linked from --from-cache when given. */
function mediumDir(cache, from) {
  const dir = join(cache, 'ernie-medium');
  if (from && !existsSync(join(dir, 'bench.json'))) {
    mkdirSync(dir, { recursive: true });
    for (const f of readdirSync(join(from, 'ernie-medium'))) linkSync(join(from, 'ernie-medium', f), join(dir, f));
  }
  log(`medium checkpoint ${dir} (built once)`);
  execFileSync(join(root, '.venv-ref/bin/python'), [join(here, 'torch_side.py'), 'make', '--dir', dir, '--config', 'medium'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return dir;
}

/** `vlmkit serve` on `dir`; resolves once /health answers 200, with the base URL and a stop(). */
async function startServer(dir, graphs, mode, nodeArgs) {
  const port = await freePort();
  const args = [join(root, 'packages/cli/dist/bin.js'), 'serve', '--model', dir, '--host', '127.0.0.1', '--port', String(port)];
  args.push('--max-batch', '16', '--max-queue', '256', '--served-model-name', 'bench', '--cache-dir', graphs);
  if (mode !== 'float32') args.push('--quantize', mode);
  const p = spawn(process.execPath, [...nodeArgs, ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise((done) => p.on('exit', (code, signal) => done(code ?? signal)));
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    const code = await Promise.race([exited, sleep(250).then(() => undefined)]);
    if (code !== undefined) throw new Error(`vlmkit serve exited (${code}) before it was ready`);
    const ok = await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
  }
  return {
    base,
    stop: async () => {
      p.kill('SIGTERM');
      return exited;
    },
  };
}

/**
 * One streaming request: the time of every content chunk (one token each: every id of the serving copy's
 * vocabulary is its own word), the usage, and the time to first token, all from `t0` (performance.now()).
 */
async function request(base, message, newTokens) {
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'bench',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: message.url } },
            { type: 'text', text: message.text },
          ],
        },
      ],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: newTokens,
    }),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 300)}`);
  const times = [];
  let usage;
  let finish;
  let rest = '';
  const decoder = new TextDecoder();
  for await (const bytes of res.body) {
    rest += decoder.decode(bytes, { stream: true });
    let end = rest.indexOf('\n\n');
    for (; end >= 0; end = rest.indexOf('\n\n')) {
      const event = rest.slice(0, end);
      rest = rest.slice(end + 2);
      const data = event.replace(/^data: /, '');
      if (data === '[DONE]') continue;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(`stream error: ${JSON.stringify(chunk.error)}`);
      if (chunk.usage) usage = chunk.usage;
      const c = chunk.choices?.[0];
      if (c?.delta?.content) times.push(performance.now());
      if (c?.finish_reason) finish = c.finish_reason;
    }
  }
  return { t0, times, usage, finish, ttft: times[0] - t0 };
}

/**
 * Aggregate decode tokens/s over the window where every stream of `group` decodes (from the last first token to
 * the first last token): the tokens all of them streamed in it, over its length.
 */
function window(runs, from, to) {
  if (!(to > from)) return { tokensPerSecond: null, windowMs: 0, tokens: 0 };
  const tokens = runs.reduce((k, r) => k + r.times.filter((t) => t > from && t <= to).length, 0);
  return { tokensPerSecond: tokens / ((to - from) / 1000), windowMs: to - from, tokens };
}

function summary(runs, decode, start, end) {
  const ttft = runs.map((r) => r.ttft);
  const tokens = runs.reduce((k, r) => k + (r.usage?.completion_tokens ?? r.times.length), 0);
  return {
    requests: runs.length,
    decodeTokensPerSecond: decode.tokensPerSecond,
    decodeWindowMs: Math.round(decode.windowMs),
    endToEndTokensPerSecond: tokens / ((end - start) / 1000),
    ttftMs: { p50: quantile(ttft, 0.5), p99: quantile(ttft, 0.99), min: Math.min(...ttft), max: Math.max(...ttft) },
    completionTokens: { min: Math.min(...runs.map((r) => r.usage?.completion_tokens ?? 0)), total: tokens },
    finishReasons: [...new Set(runs.map((r) => r.finish))],
    wallMs: Math.round(end - start),
    // Each request's send, first and last token, ms from the pattern's start: how the prompts queued.
    timeline: runs.map((r) => [r.t0, r.times[0], r.times.at(-1)].map((t) => Math.round(t - start))),
  };
}

/** N requests at once. With N = 1 the window is the request's own decode (its first to its last token). */
async function burst(base, message, n, newTokens, next) {
  const messages = await Promise.all(Array.from({ length: n }, () => message(next())));
  const start = performance.now();
  const runs = await Promise.all(messages.map((m) => request(base, m, newTokens)));
  const end = performance.now();
  const decode = window(runs, Math.max(...runs.map((r) => r.times[0])), Math.min(...runs.map((r) => r.times.at(-1))));
  if (n === 1) decode.tokensPerSecond = (runs[0].times.length - 1) / ((runs[0].times.at(-1) - runs[0].times[0]) / 1000);
  return { pattern: 'burst', concurrency: n, ...summary(runs, decode, start, end) };
}

/**
 * N clients, each sending `perClient` requests back to back; client i starts at i x `periodMs` / N (one
 * request's latency spread over the clients, as arrivals spread in a steady state). The window: from the last
 * client's first token to the first client's last token (all N clients active in it).
 */
async function closedLoop(base, message, n, perClient, periodMs, newTokens, next) {
  const messages = await Promise.all(Array.from({ length: n * perClient }, () => message(next())));
  const start = performance.now();
  const clients = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      await sleep((i * periodMs) / n);
      const mine = [];
      for (let j = 0; j < perClient; j++) mine.push(await request(base, messages[i * perClient + j], newTokens));
      return mine;
    }),
  );
  const end = performance.now();
  const runs = clients.flat();
  const from = Math.max(...clients.map((c) => c[0].times[0]));
  const to = Math.min(...clients.map((c) => c.at(-1).times.at(-1)));
  return { pattern: 'closed', concurrency: n, requestsPerClient: perClient, ...summary(runs, window(runs, from, to), start, end) };
}

/** One request's vision + prefill alone, in-process (engine.mjs at concurrency 1; its prompt: DIR/inputs.safetensors). */
function visionPrefill(dir, graphs, mode) {
  const args = [join(here, 'engine.mjs'), '--model', dir, '--cache-dir', graphs, '--concurrency', '1', '--new-tokens', '2'];
  if (mode !== 'float32') args.push('--quantize', mode);
  const out = JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
  return { visionPlusPrefillMs: out.runs[0].visionPlusPrefillMs, promptTokens: out.promptTokens, engineMsPerStep1: out.runs[0].msPerStep };
}

async function benchMode(o, dir, graphs, mode, message) {
  let k = 0;
  const next = () => k++;
  const alone = visionPrefill(dir, graphs, mode);
  log(`${mode}: vision + prefill alone ${alone.visionPlusPrefillMs.toFixed(0)} ms (${alone.promptTokens} tokens, in-process)`);
  const server = await startServer(dir, graphs, mode, o.nodeArgs);
  const runs = [];
  try {
    // One untimed request: the sessions' first-run allocations.
    await request(server.base, await message(next()), o.newTokens);
    const one = await burst(server.base, message, 1, o.newTokens, next);
    log(`${mode}: 1 stream: ${one.decodeTokensPerSecond.toFixed(1)} tokens/s, time to first token ${one.ttftMs.p50.toFixed(0)} ms`);
    runs.push(one);
    if (o.patterns.includes('burst')) {
      for (const n of o.concurrency.filter((c) => c !== 1)) {
        const r = await burst(server.base, message, n, o.newTokens, next);
        log(`${mode}: burst ${n}: ${r.decodeTokensPerSecond?.toFixed(1)} tokens/s, ttft p99 ${r.ttftMs.p99.toFixed(0)} ms`);
        runs.push(r);
      }
    }
    if (o.patterns.includes('closed')) {
      for (const n of o.closed) {
        const r = await closedLoop(server.base, message, n, o.requests, one.wallMs, o.newTokens, next);
        log(`${mode}: closed ${n}: ${r.decodeTokensPerSecond?.toFixed(1)} tokens/s, ttft p99 ${r.ttftMs.p99.toFixed(0)} ms`);
        runs.push(r);
      }
    }
  } finally {
    const code = await server.stop();
    if (code !== 0) log(`${mode}: vlmkit serve exited with ${code} on SIGTERM`);
  }
  const base = runs[0].decodeTokensPerSecond;
  for (const r of runs) {
    r.speedup = r.decodeTokensPerSecond === null ? null : r.decodeTokensPerSecond / base;
    r.ttftP99OverVisionPrefill = r.ttftMs.p99 / alone.visionPlusPrefillMs;
  }
  return { mode, ...alone, runs };
}

function goals(modes) {
  return modes.map((m) => {
    const at8 = (pattern) => m.runs.find((r) => r.pattern === pattern && r.concurrency === 8);
    const judge = (r) =>
      r && {
        throughput: r.speedup !== null && r.speedup >= 4,
        ttft: r.ttftP99OverVisionPrefill <= 3,
        speedup: r.speedup,
        ttftRatio: r.ttftP99OverVisionPrefill,
      };
    return { mode: m.mode, closed: judge(at8('closed')), burst: judge(at8('burst')) };
  });
}

const f = (x, d = 1) => (x === null || x === undefined ? '-' : x.toFixed(d));

function table(result) {
  const lines = [
    '| mode | arrivals | streams | decode tokens/s | vs 1 stream | ms/token/stream | TTFT p50 | TTFT p99 | p99 / vision+prefill | end-to-end tokens/s |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const m of result.modes) {
    for (const r of m.runs) {
      const arrivals = r.concurrency === 1 ? 'one' : r.pattern === 'burst' ? 'burst' : `closed x${r.requestsPerClient}`;
      const perStream = r.decodeTokensPerSecond ? (1000 * r.concurrency) / r.decodeTokensPerSecond : null;
      lines.push(
        `| ${m.mode} | ${arrivals} | ${r.concurrency} | ${f(r.decodeTokensPerSecond)} | ${f(r.speedup, 2)}x | ${f(perStream, 0)} | ${(r.ttftMs.p50 / 1000).toFixed(2)} s | ${(r.ttftMs.p99 / 1000).toFixed(2)} s | ${f(r.ttftP99OverVisionPrefill, 2)} | ${f(r.endToEndTokensPerSecond)} |`,
      );
    }
  }
  return lines.join('\n');
}

/** Runs the bench with `argv` (bench.mjs's arguments less --serve); returns the exit code. */
export async function serveBench(argv) {
  const { values: a } = parseArgs({ args: argv, options: OPTIONS });
  const list = (s) => s.split(',').filter(Boolean);
  const o = {
    concurrency: [...new Set([1, ...list(a.concurrency).map(Number)])].sort((x, y) => x - y),
    closed: list(a.closed).map(Number),
    requests: Number(a.requests),
    modes: list(a.modes),
    patterns: list(a.patterns),
    newTokens: Number(a['new-tokens']),
    promptTokens: Number(a['prompt-tokens']),
    imageSize: Number(a['image-size']),
    nodeArgs: a['node-args'].split(' ').filter(Boolean),
  };
  for (const m of o.modes) if (!['float32', 'float16', 'int8', 'int4'].includes(m)) throw new Error(`--modes: unknown mode '${m}'`);
  for (const p of o.patterns) if (!['burst', 'closed'].includes(p)) throw new Error(`--patterns: burst or closed, got '${p}'`);
  const cache = resolve(a.cache);
  mkdirSync(cache, { recursive: true });
  log('building @vlmkit/cli and its dependencies');
  execFileSync('pnpm', ['exec', 'turbo', 'run', 'build', '--filter=@vlmkit/cli...', '--output-logs=errors-only'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const src = a.model ? resolve(a.model) : mediumDir(cache, a['from-cache'] && resolve(a['from-cache']));
  const name = a.model ? src.split('/').at(-1) : 'medium';
  const dir = join(cache, `serve-${name}`);
  serveCopy(src, dir, join(root, 'test-fixtures/ernie-tiny'), o.imageSize);
  const messages = new Map();
  const make = await promptMaker(dir, o);
  const message = async (k) => {
    if (!messages.has(k)) messages.set(k, make(k));
    return messages.get(k);
  };
  // Every prompt is made before anything is timed (making one is tokenizer work that would compete with the server).
  const perMode = 2 + o.concurrency.reduce((k, n) => k + (n === 1 ? 0 : n), 0) + o.closed.reduce((k, n) => k + n * o.requests, 0);
  for (let k = 0; k < perMode; k++) await message(k);
  const first = await message(0);
  log(
    `prompts: ${first.tokens} tokens (an ${o.imageSize}x${o.imageSize} image and ${first.text.split(' ').length} words), ${o.newTokens} new tokens each`,
  );
  const t0 = performance.now();
  const modes = [];
  for (const mode of o.modes) modes.push(await benchMode(o, dir, join(cache, 'graphs', `${name}-${mode}`), mode, message));
  const result = {
    cpu: cpuName(),
    cores: Number(execFileSync('nproc', { encoding: 'utf8' }).trim()),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim(),
    model: name,
    promptTokens: first.tokens,
    newTokens: o.newTokens,
    wallS: Math.round((performance.now() - t0) / 1000),
    modes,
    goals: goals(modes),
  };
  const file = join(cache, `serve-bench-${name}.json`);
  writeFileSync(file, JSON.stringify(result, null, 1));
  log(`results: ${file}`);
  if (a.plot) {
    mkdirSync(resolve(a.plot, '..'), { recursive: true });
    execFileSync(join(root, '.venv-ref/bin/python'), [join(here, 'plot.py'), '--serve', file, resolve(a.plot)], { stdio: 'inherit' });
  }
  console.log(
    `\n${result.cpu}, ${result.cores} CPUs, commit ${result.commit}, ${name}: ${first.tokens}-token prompts, ${o.newTokens} new tokens\n`,
  );
  console.log(table(result));
  console.log(`\n${JSON.stringify(a.json ? result : { goals: result.goals, wallS: result.wallS })}`);
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await serveBench(process.argv.slice(2));
