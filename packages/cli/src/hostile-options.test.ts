// Issue 16, options that were taken without a word or refused unclearly (finding 7's command-line parts and the
// "unclear messages" ones): each is now a usage error (exit 2) naming the option, before any model loads, or
// does what it says.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURE_DIR } from '@vlmkit/models';
import { describe, expect, it } from 'vitest';
import { main } from './main.js';

const ERNIE = join(FIXTURE_DIR, 'ernie-tiny');
const IMAGE = join(FIXTURE_DIR, 'processors', 'images', 'tiny.png');
const INPUTS = join(ERNIE, 'cases', 'images', 'inputs.safetensors');

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(
    argv,
    (s) => {
      out += s;
    },
    {
      err: (s) => {
        err += s;
      },
    },
  );
  return { code, out, err };
}

/** A usage error: exit 2, stdout empty, stderr's first line the message. */
async function usageError(argv: string[]): Promise<string> {
  const r = await cli(argv);
  expect(r.code, `${argv.join(' ')}: ${r.err}`).toBe(2);
  expect(r.out).toBe('');
  return r.err.split('\n')[0]!;
}

const run = (...extra: string[]) => ['run', '--model', ERNIE, '--prompt', 'hi', '--device', 'cpu', ...extra];
const generate = (...extra: string[]) => ['generate', '--model', ERNIE, '--inputs', INPUTS, '--device', 'cpu', ...extra];

describe('finding 7: generation options that changed nothing, or something else, without a word', () => {
  it('finding 7: --max-new-tokens "" is refused by name (it generated 0 tokens with exit 0)', async () => {
    const empty = 'vlmkit: --max-new-tokens is empty: give it a value, or leave the option out';
    expect(await usageError(run('--max-new-tokens', ''))).toBe(empty);
    expect(await usageError(generate('--max-new-tokens', ''))).toBe(empty);
    for (const bad of [' 5', '0x10', '1.5', 'Infinity']) {
      expect(await usageError(run('--max-new-tokens', bad))).toMatch(
        new RegExp(`^vlmkit: --max-new-tokens must be an? (number|integer), got '${bad.replace('.', '\\.')}'`),
      );
    }
  });

  it('an empty value of any option is refused by name (--adapter "" ran without the adapter)', async () => {
    for (const flag of ['--adapter', '--cache-dir', '--temperature', '--seed', '--eos', '--image']) {
      expect(await usageError(run(flag, ''))).toBe(`vlmkit: ${flag} is empty: give it a value, or leave the option out`);
    }
    expect(await usageError(generate('--max-new-tokens', '4', '--adapter', ''))).toMatch(/^vlmkit: --adapter is empty/);
  });

  it('finding 7: a seed the sampler cannot hold exactly (2^32 + 1 sampled as 1) is refused by name, with the range', async () => {
    for (const seed of ['4294967297', '4294967296', '-5', '1e20']) {
      expect(await usageError(run('--temperature', '1', '--seed', seed))).toMatch(
        /^vlmkit: --seed must be an integer in \[0, 4294967295\] \(the sampler's 32-bit state\), got /,
      );
    }
  });

  it('finding 7: --top-k or --top-p without --temperature (greedy) is refused by name, in run and generate', async () => {
    for (const argv of [
      run('--top-k', '5'),
      run('--top-p', '0.9'),
      run('--temperature', '0', '--top-k', '5'),
      generate('--max-new-tokens', '4', '--top-k', '5'),
    ]) {
      expect(await usageError(argv)).toMatch(/^vlmkit: --top-[kp] has no effect without --temperature > 0 \(greedy decoding\)/);
    }
  });
});

describe('unclear messages (issue 16): --help and negative numbers', () => {
  it("run --help, every command --help and help COMMAND print that command's usage with exit 0 (was \"Unknown option '--help'\")", async () => {
    for (const command of ['run', 'preprocess', 'forward', 'generate', 'export', 'inspect', 'demo', 'graph-demo']) {
      for (const argv of [
        [command, '--help'],
        [command, '-h'],
        ['help', command],
      ]) {
        const r = await cli(argv);
        expect([r.code, r.err]).toEqual([0, '']);
        expect(r.out).toMatch(new RegExp(`^usage: vlmkit ${command} `));
        expect(r.out).toMatch(/common options:/);
      }
    }
    expect((await cli(['run', '--help'])).out).toMatch(/--prompt-file PATH/);
  });

  it('a negative number is read as the option\'s value and refused by the option\'s name, not "argument is ambiguous"', async () => {
    for (const [argv, message] of [
      [run('--temperature', '-1'), /^vlmkit: --temperature must be a finite number >= 0, got -1$/],
      [run('--temperature=-1'), /^vlmkit: --temperature must be a finite number >= 0, got -1$/],
      [run('--temperature', '1', '--seed', '-5'), /^vlmkit: --seed must be an integer in \[0, 4294967295\]/],
      [run('--temperature', '1', '--top-p', '-0.5'), /^vlmkit: --top-p must be in \(0, 1\], got -0\.5$/],
      [run('--temperature', '1', '--top-k', '-3'), /^vlmkit: --top-k must be an integer >= 0, got -3$/],
      [run('--max-new-tokens', '-1'), /^vlmkit: --max-new-tokens must be an integer >= 0, got '-1'$/],
      [run('--loop', 'graph', '--loop-chunk', '-2'), /^vlmkit: --loop-chunk must be an integer >= 1, got '-2'$/],
    ] as const) {
      const first = await usageError([...argv]);
      expect(first).toMatch(message);
      expect(first).not.toMatch(/ambiguous/);
    }
  });

  it('an argument that is no option (a prompt without --prompt) is a usage error, exit 2 (was exit 1 with a parser code)', async () => {
    expect(await usageError([...run(), 'extra words'])).toBe(
      "vlmkit: Unexpected argument 'extra words'. This command does not take positional arguments",
    );
  });

  it('a prompt that begins with a dash is the prompt', async () => {
    const out = join(await mkdtemp(join(tmpdir(), 'vlmkit-dash-')), 'inputs.safetensors');
    const r = await cli(['preprocess', '--model', ERNIE, '--image', IMAGE, '--prompt', '-5 degrees?', '--out', out]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/wrote input_ids/);
  });
});
