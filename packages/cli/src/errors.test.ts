// Every usage error goes to stderr with exit code 2 and leaves stdout empty; errors thrown past main
// (bin.ts prints them to stderr, exit 1) carry a code and name what was wrong.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURE_DIR, type ModelError } from '@vlmkit/models';
import { describe, expect, it } from 'vitest';
import { main } from './main.js';

function streams(): { out: (s: string) => void; err: (s: string) => void; stdout: () => string; stderr: () => string } {
  let [o, e] = ['', ''];
  return {
    out: (s) => {
      o += s;
    },
    err: (s) => {
      e += s;
    },
    stdout: () => o,
    stderr: () => e,
  };
}

const granite = join(FIXTURE_DIR, 'granite-tiny');
const inputs = join(granite, 'cases', 'batch-2', 'inputs.safetensors');

describe('usage errors: stderr, exit 2, nothing on stdout', () => {
  const cases: [string, string[], RegExp][] = [
    ['no command flag', ['forward', '--model', granite], /^vlmkit: --inputs is required/],
    ['generate without --max-new-tokens', ['generate', '--model', granite, '--inputs', inputs], /^vlmkit: --max-new-tokens is required/],
    ['run without --prompt', ['run', '--model', granite], /^vlmkit: --prompt is required/],
    ['preprocess without --out', ['preprocess', '--model', granite, '--prompt', 'x'], /^vlmkit: --out is required/],
    ['export without --out', ['export', '--model', granite], /^vlmkit: --out is required/],
    ['inspect without --model', ['inspect'], /^vlmkit: --model is required/],
    ['a bad --device', ['demo', '--device', 'tpu'], /^vlmkit: --device must be one of auto, cpu, cuda, got 'tpu'/],
    ['a bad --reference', ['demo', '--reference', 'x'], /^vlmkit: --reference must be one of vllm, hf/],
    ['a bad --quantize', ['demo', '--quantize', 'int3'], /^vlmkit: --quantize must be one of /],
    [
      'a bad number',
      ['generate', '--model', granite, '--inputs', inputs, '--max-new-tokens', 'many'],
      /^vlmkit: --max-new-tokens must be a number, got 'many'/,
    ],
    ['an unknown option', ['forward', '--modle', granite], /^vlmkit: Unknown option '--modle'/],
    ['a flag without its value', ['forward', '--model'], /^vlmkit: Option '--model <value>' argument missing/],
    ['an unknown command', ['nope'], /^vlmkit: unknown command 'nope'/],
  ];
  it.each(cases)('%s', async (_label, argv, message) => {
    const s = streams();
    expect(await main(argv, s.out, { err: s.err })).toBe(2);
    expect(s.stdout()).toBe('');
    expect(s.stderr()).toMatch(message);
    expect(s.stderr()).toContain('usage: vlmkit <command>');
  });

  it('help goes to stdout with exit 0', async () => {
    const s = streams();
    expect(await main(['help'], s.out, { err: s.err })).toBe(0);
    expect(s.stdout()).toMatch(/^usage: vlmkit <command>/);
    expect(s.stderr()).toBe('');
  });
});

describe('errors past usage carry a code and name what was wrong', () => {
  it('a --cache-dir that is a file: BAD_CACHE_DIR naming the path and saying it is a regular file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-cache-'));
    const file = join(dir, 'not-a-dir');
    await writeFile(file, 'x');
    const s = streams();
    const e = (await main(
      ['forward', '--model', granite, '--inputs', inputs, '--out', join(dir, 'o.safetensors'), '--device', 'cpu', '--cache-dir', file],
      s.out,
      { err: s.err },
    ).catch((x: unknown) => x)) as ModelError;
    expect(e.code).toBe('BAD_CACHE_DIR');
    expect(e.message).toBe(
      `graph cache directory ${file} cannot be used: it is a regular file, not a directory. Pass --cache-dir DIR (cacheDir) with a writable directory.`,
    );
    expect(await readFile(file, 'utf8')).toBe('x');
  });
});

describe('vlmkit inspect', () => {
  it('a good checkpoint (and adapter): the summary on stdout, exit 0', async () => {
    const s = streams();
    expect(await main(['inspect', '--model', granite, '--adapter', join(FIXTURE_DIR, 'granite-tiny-lora')], s.out, { err: s.err })).toBe(0);
    expect(s.stdout()).toMatch(/^checkpoint .*granite-tiny\nmodel_type granite4_vision\n/);
    expect(s.stdout()).toMatch(/\n {2}decoder: [\d,]+ parameters in \d+ tensors\n/);
    expect(s.stdout()).toMatch(/\ntensors: \d+ mapped, \d+ ignored, 0 unused, 0 parameters missing, 0 mismatched\n/);
    expect(s.stdout()).toMatch(/\nadapter .*granite-tiny-lora: r 4, alpha 8, 56 target weights\nok\n$/);
    expect(s.stderr()).toBe('');
  });

  it('a bad checkpoint: exit 1, the first problem named on stderr; --json gives the whole report', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-inspect-'));
    const config = JSON.parse(await readFile(join(granite, 'config.json'), 'utf8')) as { text_config: Record<string, unknown> };
    config.text_config.num_hidden_layers = 0;
    await writeFile(join(dir, 'config.json'), JSON.stringify(config));
    const s = streams();
    expect(await main(['inspect', '--model', dir, '--json'], s.out, { err: s.err })).toBe(1);
    const report = JSON.parse(s.stdout()) as { problems: { code: string; where: string; message: string }[] };
    expect(report.problems.length).toBeGreaterThan(0);
    const first = report.problems[0]!;
    expect(first.where).toMatch(/num_hidden_layers/);
    expect(s.stderr()).toBe(`vlmkit: [${first.code}] ${first.where}: ${first.message}\n`);
  });
});
