// Issue 16, crashes and hangs at the command's edges: a command line long enough to crash onnxruntime-node
// (finding 8), prompts from a file or stdin and their bounds, a prompt longer than the model's window, a reader
// that closes stdout early (finding 12), and Ctrl-C while the command waits (the FIFO / stdin case of finding 10).
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, statSync } from 'node:fs';
import { mkdtemp, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { FIXTURE_DIR, type ModelError, writeNamedTensors } from '@vlmkit/models';
import { int64 } from '@vlmkit/runtime';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_ARGV_BYTES } from './argv-limit.js';
import { main } from './main.js';
import { MAX_PROMPT_BYTES } from './prompt-input.js';
import { runBin, STACK_LINE } from './test-utils/cli-process.js';

const ERNIE = join(FIXTURE_DIR, 'ernie-tiny');
const IMAGE = join(FIXTURE_DIR, 'processors', 'images', 'tiny.png');
const PROMPT = 'Describe this image.';

let work: string;
let cache: string[];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'vlmkit-hostile-argv-'));
  cache = ['--cache-dir', join(work, 'cache'), '--device', 'cpu'];
});

interface Captured {
  code: number | undefined;
  error: ModelError | undefined;
  out: string;
  err: string;
}

/** main() in this process, its stdout and stderr captured; a thrown error (exit 1 in the bin) is returned. */
async function cli(argv: string[], stdin?: NodeJS.ReadableStream): Promise<Captured> {
  const c: Captured = { code: undefined, error: undefined, out: '', err: '' };
  try {
    c.code = await main(
      argv,
      (s) => {
        c.out += s;
      },
      {
        err: (s) => {
          c.err += s;
        },
        stdin,
      },
    );
  } catch (e) {
    c.error = e as ModelError;
  }
  return c;
}

/** Text about n bytes long that the tiny tokenizer splits into many tokens. */
function longText(bytes: number): string {
  const words = 'the quick brown fox jumps over the lazy dog while 42 cats watch ';
  return words.repeat(Math.ceil(bytes / words.length)).slice(0, bytes);
}

describe('finding 8: a long prompt never reaches onnxruntime on the command line', () => {
  it('finding 8: a 40 KB --prompt exits 2 with a message naming --prompt and --prompt-file (it was SIGSEGV, 139)', async () => {
    for (const argv of [
      ['run', '--model', ERNIE, '--prompt', longText(40_000), ...cache],
      ['run', '--model', ERNIE, `--prompt=${longText(40_000)}`, ...cache],
    ]) {
      const r = await runBin(argv, { timeoutMs: 30_000 });
      expect(r.signal).toBeNull();
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^vlmkit: --prompt is 40000 bytes: command lines over 16384 bytes are refused/);
      expect(r.stderr).toMatch(/--prompt-file PATH, or with --prompt - to read it from stdin/);
      expect(r.stderr).not.toMatch(STACK_LINE);
    }
  });

  it('finding 8: arguments that are each short but long together are refused the same way', async () => {
    const half = 'x'.repeat(MAX_ARGV_BYTES / 2);
    const r = await runBin(['run', '--model', ERNIE, '--prompt', half, '--image', half], { timeoutMs: 30_000 });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/command lines over 16384 bytes are refused/);
  });

  it('finding 8: --prompt-file with a 100 KB prompt is refused by the model window (PROMPT_TOO_LONG), not by a crash', async () => {
    const file = join(work, 'long-prompt.txt');
    await writeFile(file, longText(100_000));
    const r = await runBin(['run', '--model', ERNIE, '--prompt-file', file, ...cache], { timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^vlmkit: \[PROMPT_TOO_LONG\] the prompt is \d+ tokens; the model's max_position_embeddings \(config\.json\) is 4096/,
    );
    expect(r.stderr).not.toMatch(STACK_LINE);
  });

  it('finding 8: --prompt-file and --prompt - give the answer --prompt gives', async () => {
    const file = join(work, 'prompt.txt');
    await writeFile(file, PROMPT);
    const argv = ['run', '--model', ERNIE, '--image', IMAGE, '--max-new-tokens', '6', ...cache];
    const inline = await cli([...argv, '--prompt', PROMPT]);
    expect(inline.code).toBe(0);
    const answer = inline.out.replace(/time to first token .*$/m, '');
    expect((await cli([...argv, '--prompt-file', file])).out.replace(/time to first token .*$/m, '')).toBe(answer);
    expect((await cli([...argv, '--prompt', '-'], Readable.from([PROMPT]))).out.replace(/time to first token .*$/m, '')).toBe(answer);
    // The child process reads its real stdin.
    const r = await runBin([...argv, '--prompt', '-'], { input: PROMPT, timeoutMs: 60_000 });
    expect(r.code).toBe(0);
    expect(r.stdout.replace(/time to first token .*$/m, '')).toBe(answer);
  });

  it('finding 8: --prompt-file reads only a bounded regular UTF-8 file: a FIFO, /dev/zero, 17 MiB and bad UTF-8 are refused at once', async () => {
    const fifo = join(work, 'prompt-fifo');
    execFileSync('mkfifo', [fifo]);
    const big = join(work, 'big.txt');
    await writeFile(big, '');
    await truncate(big, MAX_PROMPT_BYTES + 1);
    const latin1 = join(work, 'latin1.txt');
    await writeFile(latin1, Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    for (const [file, why] of [
      [fifo, /is not a regular file: to pipe a prompt in, use --prompt - \(stdin\)/],
      ['/dev/zero', /is not a regular file/],
      [big, /is 16777217 bytes: prompts over 16 MiB are refused/],
      [latin1, /is not UTF-8 text/],
    ] as const) {
      const t0 = performance.now();
      const c = await cli(['run', '--model', ERNIE, '--prompt-file', file, ...cache]);
      expect(c.code, file).toBe(2);
      expect(c.err).toMatch(why);
      expect(performance.now() - t0).toBeLessThan(20_000);
    }
    expect((await cli(['run', '--model', ERNIE, '--prompt', 'x', '--prompt-file', big])).err).toMatch(
      /give --prompt or --prompt-file, not both/,
    );
  });
});

describe('the prompt against the model window (issue 16, unclear messages: 1 MB prompt, 64k tokens)', () => {
  it('a prompt longer than max_position_embeddings is PROMPT_TOO_LONG naming both numbers, in run, forward and generate', async () => {
    const file = join(work, 'one-mb.txt');
    await writeFile(file, longText(1_000_000));
    const run = await cli(['run', '--model', ERNIE, '--prompt-file', file, ...cache]);
    expect(run.error?.code).toBe('PROMPT_TOO_LONG');
    expect(run.error?.message).toMatch(/the prompt is \d+ tokens; the model's max_position_embeddings \(config\.json\) is 4096/);
    const inputs = join(work, 'long-ids.safetensors');
    const S = 4097;
    await writeNamedTensors(inputs, {
      input_ids: int64(new Array<number>(S).fill(100), [1, S]),
      attention_mask: int64(new Array<number>(S).fill(1), [1, S]),
    });
    for (const argv of [
      ['forward', '--model', ERNIE, '--inputs', inputs, '--out', join(work, 'fwd.safetensors'), ...cache],
      ['generate', '--model', ERNIE, '--inputs', inputs, '--max-new-tokens', '2', ...cache],
    ]) {
      const c = await cli(argv);
      expect(c.error?.code).toBe('PROMPT_TOO_LONG');
      expect(c.error?.message).toMatch(/the prompt is 4097 tokens; the model's max_position_embeddings \(config\.json\) is 4096/);
    }
  });
});

describe('finding 12: a reader that closes stdout early', () => {
  it('finding 12: vlmkit run | head -c 20 ends quietly with exit 0, no EPIPE stack trace', async () => {
    let taken = 0;
    const r = await runBin(['run', '--model', ERNIE, '--prompt', 'hi', '--max-new-tokens', '3000', ...cache], {
      timeoutMs: 60_000,
      onStdout: (chunk, child) => {
        taken += chunk.length;
        if (taken >= 20) child.stdout?.destroy();
      },
    });
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/EPIPE|Error/);
    expect(r.stderr).not.toMatch(STACK_LINE);
    expect(r.ms).toBeLessThan(20_000);
  });
});

describe('stdout that cannot be written', () => {
  it('run with stdout on a full device (/dev/full: ENOSPC) stops with exit 1 and the reason, no stack trace', async (ctx) => {
    // Writes to /dev/full fail with ENOSPC and change nothing: the device is only opened as the child's stdout.
    let fd: number;
    try {
      if (!statSync('/dev/full').isCharacterDevice()) return ctx.skip();
      fd = openSync('/dev/full', 'w');
    } catch {
      return ctx.skip();
    }
    try {
      const r = await runBin(['run', '--model', ERNIE, '--prompt', 'hi', '--max-new-tokens', '50', ...cache], {
        stdoutFd: fd,
        timeoutMs: 60_000,
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^vlmkit: cannot write to stdout: ENOSPC/m);
      expect(r.stderr).not.toMatch(STACK_LINE);
    } finally {
      closeSync(fd);
    }
  });
});

describe('Ctrl-C while run waits (finding 10: the first Ctrl-C was ignored)', () => {
  it('the first Ctrl-C while the model loads ends run with exit 130 and a message', async () => {
    let sent = false;
    // A cache of its own: the graphs are built, so the load lasts well past the signal's delivery.
    const cold = ['--cache-dir', await mkdtemp(join(work, 'cold-cache-')), '--device', 'cpu'];
    const r = await runBin(['run', '--model', ERNIE, '--prompt', 'hi', '--max-new-tokens', '3000', '--json', ...cold], {
      timeoutMs: 60_000,
      onStdout: (chunk, child) => {
        // The first progress line: main is running (its handler installed) and the model is loading.
        if (!sent && chunk.toString().includes('"type":"progress"')) {
          sent = true;
          child.kill('SIGINT');
        }
      },
    });
    expect(sent).toBe(true);
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/^vlmkit: interrupted \(Ctrl-C\) before the answer started$/m);
    expect(r.stdout).not.toMatch(/"type":"text"/);
    expect(r.ms).toBeLessThan(20_000);
  });

  it('the first Ctrl-C while --prompt - waits on stdin ends run with 130', async () => {
    const stdin = new PassThrough();
    const running = cli(['run', '--model', ERNIE, '--prompt', '-', ...cache], stdin);
    // A real SIGINT to this process, once main has installed its handler (without one it would end the test run).
    for (let i = 0; i < 200 && process.listenerCount('SIGINT') === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(process.listenerCount('SIGINT')).toBe(1);
    process.kill(process.pid, 'SIGINT');
    const c = await running;
    expect(c.code).toBe(130);
    expect(c.err).toBe('vlmkit: interrupted (Ctrl-C) while reading the prompt\n');
    expect(process.listenerCount('SIGINT')).toBe(0);
  });

  it('forward and generate refuse --inputs that is a FIFO instead of blocking on it', async () => {
    const fifo = join(work, 'inputs-fifo');
    execFileSync('mkfifo', [fifo]);
    for (const argv of [
      ['forward', '--model', ERNIE, '--inputs', fifo, '--out', join(work, 'o.safetensors'), ...cache],
      ['generate', '--model', ERNIE, '--inputs', fifo, '--max-new-tokens', '2', ...cache],
    ]) {
      const r = await runBin(argv, { timeoutMs: 30_000 });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^vlmkit: cannot read --inputs .*inputs-fifo: not a regular file/);
    }
  });

  it('run refuses an --image that is a FIFO at once instead of blocking on it', async () => {
    const fifo = join(work, 'image-fifo');
    execFileSync('mkfifo', [fifo]);
    const r = await runBin(['run', '--model', ERNIE, '--image', fifo, '--prompt', 'hi', ...cache], { timeoutMs: 30_000 });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^vlmkit: cannot read --image .*image-fifo: not a regular file/);
  });
});
