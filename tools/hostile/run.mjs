#!/usr/bin/env node
// The hostile suite: every case a real child process of the built CLI (or, for chat messages, of
// tools/hostile/chat-probe.mjs on the library), on copies of the tiny models in a temp folder,
// with a timeout; each classified as ok, clean error, refused by name, unexpected error (a request
// that must work failed), crash, hang, silent difference or data loss. docs/hostile.md explains.
//
//   node tools/hostile/run.mjs [--only CLASS[,CLASS]] [--grep REGEX] [--cli PATH/bin.js] [--jobs N]
//                              [--timeout S] [--out DIR]
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { cp, link, lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { jsCases } from './cases.mjs';
import { changes, compareWithHf, describe, readSafetensors, runChild, snapshotTree } from './lib.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../..');
const FIX = join(REPO, 'test-fixtures');
const HOSTILE = join(FIX, 'hostile');
const CLASSES = ['images', 'videos', 'processor-files', 'templates', 'prompts', 'options', 'outputs', 'cache', 'special-files'];
// 'runner error': the suite itself failed on the case (a bug here, not in the CLI).
const OUTCOMES = [
  'ok',
  'clean error',
  'refused by name',
  'unexpected error',
  'crash',
  'hang',
  'silent difference',
  'data loss',
  'runner error',
];

const { values: args, positionals } = parseArgs({
  options: {
    only: { type: 'string' },
    grep: { type: 'string' },
    cli: { type: 'string', default: join(REPO, 'packages/cli/dist/bin.js') },
    jobs: { type: 'string', default: '2' },
    timeout: { type: 'string', default: '60' },
    out: { type: 'string', default: join(HERE, 'out') },
    'memory-gb': { type: 'string', default: '6' },
    keep: { type: 'boolean', default: false },
    table: { type: 'boolean', default: false },
  },
  allowPositionals: true,
});
const CLI = resolve(args.cli);
const CLI_ROOT = resolve(dirname(CLI), '../../..'); // the checkout the CLI belongs to (for chat-probe)
const TIMEOUT_MS = Number(args.timeout) * 1000;
const JOBS = Number(args.jobs);
const MEMORY_KB = Number(args['memory-gb']) * 1024 * 1024;
const only = args.only ? new Set(args.only.split(',')) : null;

// ---------------------------------------------------------------------------------------------
// Shared state: pristine model copies, a warm graph cache, inputs for forward / generate
// ---------------------------------------------------------------------------------------------

const MODEL_SOURCES = { ernie: join(FIX, 'ernie-tiny'), granite: join(FIX, 'granite-tiny') };

async function copyModel(from, to) {
  await mkdir(to, { recursive: true });
  for (const e of await readdir(from, { withFileTypes: true })) {
    if (e.isFile()) await cp(join(from, e.name), join(to, e.name)); // a copy, never a link into test-fixtures
  }
}

function cliArgv(argv) {
  return [process.execPath, CLI, ...argv];
}

async function prepare(tmp) {
  const ctx = { tmp, src: {}, cache: join(tmp, 'cache'), inputs: {}, shared: join(tmp, 'shared') };
  await mkdir(ctx.shared, { recursive: true });
  for (const [m, from] of Object.entries(MODEL_SOURCES)) {
    ctx.src[m] = join(tmp, 'src', m);
    await copyModel(from, ctx.src[m]);
  }
  ctx.src.lora = join(tmp, 'src', 'lora');
  await copyModel(join(FIX, 'granite-tiny-lora'), ctx.src.lora);
  ctx.image = join(ctx.shared, 'png-rgb.png');
  await cp(join(HOSTILE, 'images', 'png-rgb.png'), ctx.image);
  for (const m of ['ernie', 'granite']) {
    const out = join(ctx.shared, `${m}-inputs.safetensors`);
    const r = await runChild(
      cliArgv(['preprocess', '--model', ctx.src[m], '--image', ctx.image, '--prompt', 'Describe this image.', '--out', out]),
      {
        cwd: tmp,
        env: process.env,
        timeoutMs: TIMEOUT_MS,
        memoryKb: MEMORY_KB,
      },
    );
    if (r.code !== 0) throw new Error(`preparing ${m} inputs failed: ${r.stderr}`);
    ctx.inputs[m] = out;
    // Warm the shared cache so that each case pays its own work, not the first build.
    await runChild(cliArgv(['run', '--model', ctx.src[m], '--prompt', 'hi', '--max-new-tokens', '1', '--cache-dir', ctx.cache]), {
      cwd: tmp,
      env: process.env,
      timeoutMs: TIMEOUT_MS * 3,
      memoryKb: MEMORY_KB,
    });
  }
  return ctx;
}

// ---------------------------------------------------------------------------------------------
// Cases from HF's expectations (make_expected.py)
// ---------------------------------------------------------------------------------------------

function overlayContent(content) {
  return typeof content === 'string' ? content : JSON.stringify(content, null, 2);
}

async function hfCases() {
  const expected = JSON.parse(await readFile(join(HOSTILE, 'expected.json'), 'utf8'));
  const cases = [];
  for (const e of expected.cases) {
    const common = {
      id: e.id,
      cls: e.cls,
      model: e.model,
      overlay: e.overlay,
      hf: e.hf,
      expect: e.expect ?? (e.hf ? 'hf' : 'any'),
      note: e.note,
    };
    if (e.via === 'chat') {
      cases.push({
        ...common,
        chat: true,
        setup: async (c) => {
          const text = JSON.stringify(e.messages).replaceAll('"IMAGES/', JSON.stringify(`${join(HOSTILE, 'images')}/`).slice(0, -1));
          const messages = join(c.dir, 'messages.json');
          await writeFile(messages, text);
          const out = join(c.dir, 'out.json');
          return { argv: [process.execPath, join(HERE, 'chat-probe.mjs'), CLI_ROOT, c.model, messages, out], raw: true, outJson: out };
        },
      });
      continue;
    }
    const build = async (c, cmd) => {
      const argv = [cmd, '--model', c.model];
      for (const im of e.images) argv.push('--image', join(HOSTILE, 'images', im));
      if (e.video) argv.push('--video', join(HOSTILE, 'videos', e.video));
      let stdin;
      if (e.prompt_file !== undefined) {
        let file = join(HOSTILE, 'prompts', e.prompt_file);
        if (expected.runtime_prompts[e.prompt_file] !== undefined) {
          file = join(c.dir, `${e.prompt_file}.txt`);
          await writeFile(file, expected.runtime_prompts[e.prompt_file]);
        }
        if (e.via === 'stdin') {
          argv.push('--prompt', '-');
          stdin = await readFile(file);
        } else argv.push('--prompt-file', file);
      } else argv.push(`--prompt=${e.prompt}`);
      const out = join(c.dir, 'out.safetensors');
      if (cmd === 'preprocess') argv.push('--out', out);
      else argv.push('--max-new-tokens', '2', '--cache-dir', c.ctx.cache);
      const watch = [...e.images.map((im) => join(HOSTILE, 'images', im)), ...(e.video ? [join(HOSTILE, 'videos', e.video)] : [])];
      return { argv, stdin, watch, outSafetensors: cmd === 'preprocess' ? out : undefined };
    };
    cases.push({ ...common, setup: (c) => build(c, 'preprocess') });
    // The processor files also go through `run`: a folder HF reads must run, one HF refuses must be refused.
    if (e.cls === 'processor-files') {
      cases.push({ ...common, id: `${e.id} (run)`, runOnly: true, setup: (c) => build(c, 'run') });
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// One case
// ---------------------------------------------------------------------------------------------

const CRASH = [
  /^\s+at .+(\(.+:\d+:\d+\)|:\d+:\d+)$/m, // a JS stack frame
  /FATAL ERROR/,
  /Segmentation fault/i,
  /Native stack trace|----- Native stack trace -----/,
  /terminate called/,
  /core dumped/i,
  /Aborted/,
  /node:internal\//,
  /UnhandledPromiseRejection|Unhandled 'error' event/,
  /out of memory|memory allocation .* failed|Cannot allocate memory/i,
];

function isClean(stderr) {
  return /^vlmkit: \S/m.test(stderr) && !CRASH.some((re) => re.test(stderr));
}

function classify(k, r, extra) {
  const notes = [];
  if (extra.dataLoss.length > 0) return { outcome: 'data loss', notes: extra.dataLoss };
  if (r.timedOut) return { outcome: 'hang', notes: [`killed after ${TIMEOUT_MS / 1000} s`] };
  const crashText = CRASH.find((re) => re.test(r.stderr) || re.test(r.stdout));
  if (r.signal || r.code >= 128 || (r.code !== 0 && r.code !== 1 && r.code !== 2) || crashText) {
    return { outcome: 'crash', notes: [`exit ${r.code} signal ${r.signal}`, crashText ? `matched ${crashText}` : ''].filter(Boolean) };
  }
  if (r.code !== 0) {
    if (!isClean(r.stderr)) return { outcome: 'crash', notes: ['failed without a `vlmkit:` message'] };
    if (k.expect === 'ok') return { outcome: 'unexpected error', notes };
    if (k.expect === 'hf' && k.hf?.outputs) return { outcome: 'refused by name', notes };
    return { outcome: 'clean error', notes };
  }
  // exit 0
  if (k.expect === 'error') return { outcome: 'silent difference', notes: ['exit 0 where a refusal is expected'] };
  if (k.expect === 'warn-or-error' && !k.warnPattern.test(r.stderr)) {
    return { outcome: 'silent difference', notes: ['exit 0 with no warning about the ignored option'] };
  }
  if (k.expect === 'hf') {
    if (k.hf.raises) return { outcome: 'silent difference', notes: [`exit 0 where HF raises ${k.hf.raises}`] };
    if (extra.compare?.length) return { outcome: 'silent difference', notes: extra.compare };
  }
  if (extra.check) return { outcome: 'silent difference', notes: [extra.check] };
  return { outcome: 'ok', notes };
}

async function caseContext(k, n, ctx) {
  const dir = join(ctx.tmp, 'cases', String(n));
  await mkdir(dir, { recursive: true });
  const c = { ctx, dir, n, inputs: undefined, children: [] };
  // The case's own copy of an input image: a case may try to write over it.
  c.image = join(dir, 'input.png');
  await cp(ctx.image, c.image);
  if (k.model) {
    c.model = join(dir, 'model');
    await copyModel(ctx.src[k.model], c.model);
    for (const [name, content] of Object.entries(k.overlay ?? {})) {
      if (content === null) await rm(join(c.model, name), { force: true });
      else await writeFile(join(c.model, name), overlayContent(content));
    }
    c.inputs = join(dir, 'inputs.safetensors');
    await cp(ctx.inputs[k.model], c.inputs);
  }
  if (k.models) {
    c.models = {};
    for (const m of k.models) {
      c.models[m] = join(dir, `model-${m}`);
      await copyModel(ctx.src[m], c.models[m]);
    }
  }
  if (k.adapter) {
    c.adapter = join(dir, 'adapter');
    await copyModel(ctx.src.lora, c.adapter);
  }
  // The special file an output path is or links to (its type must survive the case).
  c.specialTarget = async (p) => {
    try {
      const real = await realpath(p);
      const s = await lstat(real);
      return s.isFIFO() || s.isCharacterDevice() || s.isBlockDevice() || s.isSocket() ? [real] : [];
    } catch {
      return [];
    }
  };
  c.link = async (name, target) => {
    const p = join(dir, name);
    await symlink(target, p);
    return p;
  };
  c.hardlink = async (name, target) => {
    const p = join(dir, name);
    await link(target, p);
    return p;
  };
  c.mkdir = async (name) => {
    const p = join(dir, name);
    await mkdir(p, { recursive: true });
    return p;
  };
  c.fifo = async (name) => {
    const p = join(dir, name);
    execFileSync('mkfifo', [p]);
    return p;
  };
  c.fifoWithWriter = async (name, file) => {
    const p = await c.fifo(name);
    const w = spawn('/bin/sh', ['-c', 'cat "$0" > "$1"', file, p], { detached: true, stdio: 'ignore' });
    c.children.push(w);
    return p;
  };
  // Device nodes made here (as /dev/null's and /dev/full's numbers): a command that replaces one
  // replaces a file of this temp folder, never a device of the machine.
  c.mknod = async (name, major, minor) => {
    const p = join(dir, name);
    execFileSync('mknod', [p, 'c', String(major), String(minor)]);
    return p;
  };
  c.sparse = async (name, size) => {
    const p = join(ctx.shared, name);
    try {
      await stat(p);
    } catch {
      await writeFile(p, '');
      await truncate(p, size);
    }
    return p;
  };
  c.randomFile = async (name, size) => {
    const p = join(ctx.shared, name);
    try {
      await stat(p);
    } catch {
      const fd = openSync(p, 'w');
      const chunk = Buffer.alloc(1 << 20);
      for (let i = 0; i < size / chunk.length; i++) {
        for (let j = 0; j < chunk.length; j += 4) chunk.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, j);
        writeSync(fd, chunk);
      }
      closeSync(fd);
    }
    return p;
  };
  return c;
}

async function watchSnapshot(c, paths) {
  const snap = new Map();
  for (const m of [c.model, ...Object.values(c.models ?? {}), c.adapter].filter(Boolean)) await snapshotTree(m, snap);
  for (const p of paths) {
    if (!p || snap.has(p)) continue;
    const d = await describe(p);
    snap.set(p, d);
    if (d === 'directory' && !p.startsWith('/proc') && p !== '/') await snapshotTree(p, snap);
  }
  return snap;
}

async function damageCache(dir, how) {
  const files = [];
  const walk = async (d) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) files.push(p);
    }
  };
  await walk(dir);
  for (const [i, p] of files.entries()) {
    const size = (await stat(p)).size;
    if (how === 'truncate') await truncate(p, 0);
    else if (how === 'half') await truncate(p, Math.floor(size / 2));
    else if (how === 'random')
      await writeFile(p, Buffer.from(Array.from({ length: Math.min(size, 1 << 20) }, () => (Math.random() * 256) | 0)));
    else if (how === 'flip') {
      const b = await readFile(p);
      if (b.length) b[Math.floor(b.length / 2)] ^= 0xff;
      await writeFile(p, b);
    } else if (how === 'inplace') {
      // Write in place (same inode): what a user's editor or a tool does to a cache file.
      const fd = openSync(p, 'r+');
      writeSync(fd, Buffer.from(`hostile ${i}`), 0, undefined, 0);
      closeSync(fd);
    } else {
      await rm(p, { force: true });
      if (how === 'dir') await mkdir(p);
      else if (how === 'fifo') execFileSync('mkfifo', [p]);
      else if (how === 'zero') await symlink('/dev/zero', p);
    }
  }
  return files.length;
}

/** Cache files that share an inode with a model file (hard links into the user's checkpoint). */
async function aliases(cacheDir, modelDirs) {
  const inodes = new Map();
  for (const m of modelDirs) {
    for (const e of await readdir(m)) {
      const s = await stat(join(m, e));
      inodes.set(`${s.dev}:${s.ino}`, join(m, e));
    }
  }
  const out = [];
  const walk = async (d) => {
    let entries = [];
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else {
        try {
          const s = await stat(p);
          const hit = inodes.get(`${s.dev}:${s.ino}`);
          if (hit) out.push(`${p} is an alias of ${hit}`);
        } catch {}
      }
    }
  };
  await walk(cacheDir);
  return out;
}

async function runCase(k, n, ctx) {
  const c = await caseContext(k, n, ctx);
  const envBase = { ...process.env, XDG_CACHE_HOME: join(c.dir, 'xdg'), NO_COLOR: '1' };
  const opts = (extra) => ({ cwd: c.dir, env: envBase, timeoutMs: TIMEOUT_MS, memoryKb: MEMORY_KB, ...extra });
  let result;
  const extra = { dataLoss: [] };
  try {
    if (k.many) {
      const argvs = k.many(c);
      const before = await watchSnapshot(c, []);
      const rs = await Promise.all(argvs.map((a) => runChild(cliArgv(a), opts())));
      extra.dataLoss = changes(before, await watchSnapshot(c, []));
      extra.dataLoss.push(...(await aliases(join(c.dir, 'cache'), Object.values(c.models))));
      // The worst of the N runs stands for the case.
      const ranked = rs.map((r) => ({ r, o: classify(k, r, extra) }));
      ranked.sort((a, b) => OUTCOMES.indexOf(b.o.outcome) - OUTCOMES.indexOf(a.o.outcome));
      const worst = ranked[0];
      const failed = rs.filter((r) => r.code !== 0).length;
      return {
        ...worst.o,
        notes: [...worst.o.notes, `${failed} of ${rs.length} processes failed`],
        code: worst.r.code,
        signal: worst.r.signal,
        wallMs: Math.max(...rs.map((r) => r.wallMs)),
        stderr: worst.r.stderr,
        argv: argvs.map((a) => a.join(' ')).join(' & '),
      };
    }
    if (k.pair) {
      const [a, b] = k.pair(c);
      const ra = await runChild(cliArgv(a), opts());
      const rb = await runChild(cliArgv(b), opts());
      const o = classify(k, ra.code !== 0 ? ra : rb, extra);
      if (o.outcome === 'ok' || (ra.code === 0 && rb.code === 0)) {
        const textA = ra.stdout.split('\n')[0];
        const textB = rb.stdout.split('\n')[0];
        if (k.samePairIs && textA === textB)
          return {
            outcome: k.samePairIs,
            notes: [`same output: ${JSON.stringify(textA)}`],
            code: 0,
            argv: `${a.join(' ')} ; ${b.join(' ')}`,
            wallMs: ra.wallMs + rb.wallMs,
          };
        if (k.differentPairIs && textA !== textB)
          return {
            outcome: k.differentPairIs,
            notes: [`${JSON.stringify(textA)} vs ${JSON.stringify(textB)}`],
            code: 0,
            argv: a.join(' '),
            wallMs: ra.wallMs + rb.wallMs,
          };
      }
      return {
        ...o,
        code: ra.code,
        signal: ra.signal,
        stderr: ra.stderr + rb.stderr,
        argv: `${a.join(' ')} ; ${b.join(' ')}`,
        wallMs: ra.wallMs + rb.wallMs,
      };
    }
    // A cache built then damaged: the model copy is compared from before the build, so damage that
    // reaches the checkpoint through the cache counts as the loss it is.
    const prebuilt = k.prebuild ? await watchSnapshot(c, []) : undefined;
    if (k.prebuild) {
      await runChild(cliArgv(k.setup(c).argv), opts());
      await damageCache(join(c.dir, 'cache'), k.damage);
    }
    const s = await k.setup(c);
    const before = prebuilt ?? (await watchSnapshot(c, s.watch ?? []));
    const env = { ...envBase };
    for (const [key, v] of Object.entries(s.env ?? {})) {
      if (v === undefined) delete env[key];
      else env[key] = v;
    }
    const argv = s.raw ? s.argv : cliArgv(s.argv);
    result = await runChild(argv, opts({ env, stdin: s.stdin, closeStdoutAfter: s.closeStdoutAfter }));
    if (k.afterAll === 'overwrite-cache-in-place') {
      extra.dataLoss.push(...(await aliases(join(c.dir, 'cache'), [c.model])));
      await damageCache(join(c.dir, 'cache'), 'inplace');
    }
    extra.dataLoss.push(...changes(before, await watchSnapshot(c, s.watch ?? [])));
    if (result.code === 0 && k.expect === 'hf' && k.hf?.outputs) {
      try {
        const ours = s.outJson
          ? JSON.parse(await readFile(s.outJson, 'utf8'))
          : s.outSafetensors
            ? await readSafetensors(s.outSafetensors)
            : null;
        if (ours) extra.compare = compareWithHf(ours, k.hf.outputs);
      } catch (e) {
        extra.compare = [`output unreadable: ${e.message}`];
      }
    }
    if (result.code === 0 && k.check) extra.check = k.check(result);
    const o = classify(k, result, extra);
    return { ...o, code: result.code, signal: result.signal, wallMs: result.wallMs, stderr: result.stderr, argv: argv.slice(2).join(' ') };
  } finally {
    for (const w of c.children) {
      try {
        process.kill(-w.pid, 'SIGKILL');
      } catch {}
    }
    if (k.cleanup) await rm(k.cleanup(c), { recursive: true, force: true });
    if (!args.keep) {
      execFileSync('chmod', ['-R', 'u+rwx', c.dir]);
      await rm(c.dir, { recursive: true, force: true });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

function table(rows) {
  const head = ['class', 'cases', ...OUTCOMES];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  const total = Object.fromEntries(OUTCOMES.map((o) => [o, 0]));
  let all = 0;
  for (const cls of CLASSES) {
    const rs = rows.filter((r) => r.cls === cls);
    if (rs.length === 0) continue;
    const counts = OUTCOMES.map((o) => rs.filter((r) => r.outcome === o).length);
    counts.forEach((x, i) => {
      total[OUTCOMES[i]] += x;
    });
    all += rs.length;
    lines.push(`| ${cls} | ${rs.length} | ${counts.join(' | ')} |`);
  }
  lines.push(`| **all** | **${all}** | ${OUTCOMES.map((o) => `**${total[o]}**`).join(' | ')} |`);
  return lines.join('\n');
}

/** `--table A.jsonl B.jsonl ...`: the summary table of earlier runs, a later file's row replacing an earlier one's. */
async function tableOnly(files) {
  const byId = new Map();
  for (const f of files) {
    for (const line of (await readFile(f, 'utf8')).split('\n')) {
      if (line.trim() === '') continue;
      const row = JSON.parse(line);
      byId.set(row.id, row);
    }
  }
  process.stdout.write(`${table([...byId.values()])}\n`);
}

async function main() {
  if (args.table) return tableOnly(positionals);
  const tmp = await mkdtemp(join(tmpdir(), 'vlmkit-hostile-'));
  await mkdir(args.out, { recursive: true });
  const started = new Date();
  let cases = [...(await hfCases()), ...jsCases()];
  if (only) cases = cases.filter((k) => only.has(k.cls));
  if (args.grep) cases = cases.filter((k) => new RegExp(args.grep).test(k.id));
  const ids = new Set();
  for (const k of cases) {
    if (ids.has(k.id)) throw new Error(`duplicate case id ${k.id}`);
    ids.add(k.id);
  }
  process.stdout.write(`${cases.length} cases, ${JOBS} at a time, timeout ${TIMEOUT_MS / 1000} s, CLI ${CLI}\n`);
  const ctx = await prepare(tmp);
  const log = join(args.out, 'cases.jsonl');
  await writeFile(log, '');
  const rows = [];
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < cases.length) {
      const n = next++;
      const k = cases[n];
      let r;
      try {
        r = await runCase(k, n, ctx);
      } catch (e) {
        r = { outcome: 'runner error', notes: [e.stack] };
      }
      const row = {
        id: k.id,
        cls: k.cls,
        outcome: r.outcome,
        notes: r.notes,
        code: r.code,
        signal: r.signal,
        wall_s: r.wallMs === undefined ? undefined : +(r.wallMs / 1000).toFixed(2),
        argv: r.argv,
        stderr: r.stderr?.slice(0, 2000),
        expect: k.expect,
        hf: k.hf?.raises ? `raises ${k.hf.raises}` : k.hf ? 'ok' : undefined,
      };
      rows.push(row);
      await writeFile(log, `${JSON.stringify(row)}\n`, { flag: 'a' });
      done++;
      if (r.outcome !== 'ok' && r.outcome !== 'clean error')
        process.stdout.write(`[${done}/${cases.length}] ${r.outcome}: ${k.id}  ${r.notes?.join('; ').slice(0, 300) ?? ''}\n`);
      else if (done % 50 === 0) process.stdout.write(`[${done}/${cases.length}]\n`);
    }
  };
  await Promise.all(Array.from({ length: JOBS }, worker));
  rows.sort((a, b) => a.id.localeCompare(b.id));
  const cpu = execFileSync('sh', ['-c', "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]).toString().trim();
  const summary = [
    `Hostile suite: ${rows.length} cases, ${started.toISOString()} to ${new Date().toISOString()}`,
    `CLI: ${CLI}${commitOf(CLI_ROOT)}; CPU: ${cpu} (${execFileSync('nproc').toString().trim()} cores); timeout ${TIMEOUT_MS / 1000} s, ${JOBS} at a time`,
    '',
    table(rows),
    '',
  ].join('\n');
  const bad = rows.filter((r) => !['ok', 'clean error'].includes(r.outcome));
  const details = bad.map(
    (r) =>
      `- ${r.outcome}: \`${r.id}\`: ${r.notes?.join('; ').slice(0, 400)}${r.stderr ? ` (stderr: ${JSON.stringify(r.stderr.trim().split('\n')[0].slice(0, 200))})` : ''}`,
  );
  await writeFile(join(args.out, 'summary.md'), `${summary}\n${details.join('\n')}\n`);
  process.stdout.write(`\n${summary}\n`);
  process.stdout.write(`per case: ${log}\nsummary: ${join(args.out, 'summary.md')}\n`);
  if (!args.keep) await rm(tmp, { recursive: true, force: true });
}

function commitOf(root) {
  try {
    const head = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
    const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .toString()
      .trim();
    return ` (checkout at ${head}${dirty ? ', with uncommitted changes' : ''})`;
  } catch {
    return '';
  }
}

await main();
