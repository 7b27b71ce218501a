// `--loop graph|host` and `--loop-chunk` on `vlmkit generate` and `vlmkit run`: the in-graph loop gives the
// host loop's ids (HF's, for the fixture) and the same streamed text; bad values are usage errors (exit 2).
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURE_DIR, readNamedTensors } from '@vlmkit/models';
import { describe, expect, it } from 'vitest';

import { main } from './main.js';

const ernie = join(FIXTURE_DIR, 'ernie-tiny');
const granite = join(FIXTURE_DIR, 'granite-tiny');

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let [out, err] = ['', ''];
  const code = await main(
    argv,
    (s) => {
      out += s;
    },
    {
      tty: false,
      err: (s) => {
        err += s;
      },
    },
  );
  return { code, out, err };
}

describe('vlmkit generate --loop graph', () => {
  for (const [model, name] of [
    [ernie, 'batch-padded'],
    [granite, 'batch-2'],
  ] as const) {
    it(`writes HF's greedy generated_ids and streams every step, chunks of 3 (${name})`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-loop-'));
      const caseDir = join(model, 'cases', name);
      const want = await readNamedTensors(join(caseDir, 'expected.safetensors'));
      const n = want.generated_ids!.dims[1]!;
      const out = join(dir, 'gen.safetensors');
      const run = await cli([
        'generate',
        '--model',
        model,
        '--inputs',
        join(caseDir, 'inputs.safetensors'),
        '--max-new-tokens',
        String(n),
        '--out',
        out,
        '--device',
        'cpu',
        '--loop',
        'graph',
        '--loop-chunk',
        '3',
      ]);
      expect(run.code, run.err).toBe(0);
      const got = await readNamedTensors(out);
      expect(Array.from(got.generated_ids!.data as BigInt64Array)).toEqual(Array.from(want.generated_ids!.data as BigInt64Array));
      const streamed = /tokens:(.*)/.exec(run.out)![1]!;
      expect(streamed.match(/\[\d+, \d+\]/g)).toHaveLength(n);
    });
  }
});

describe('vlmkit run --loop graph', () => {
  it('streams the same answer as --loop host (ERNIE, an image)', async () => {
    const base = [
      'run',
      '--model',
      ernie,
      '--image',
      join(FIXTURE_DIR, 'processors', 'images', 'photo.jpg'),
      '--prompt',
      'Describe this image.',
    ];
    const args = ['--max-new-tokens', '12', '--device', 'cpu', '--json'];
    const host = await cli([...base, ...args, '--loop', 'host']);
    const graph = await cli([...base, ...args, '--loop', 'graph', '--loop-chunk', '5']);
    expect([host.code, graph.code]).toEqual([0, 0]);
    const tokens = (text: string) =>
      text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string; text?: string; tokens?: number[] })
        .filter((e) => e.type !== 'progress' && e.type !== 'summary')
        .map((e) => e.text ?? '');
    expect(tokens(graph.out)).toEqual(tokens(host.out));
    expect(tokens(host.out).join('').length).toBeGreaterThan(0);
  });
});

describe('--loop usage errors', () => {
  it('an unknown loop, a chunk of 0, and --loop-chunk without --loop graph exit 2 with the reason on stderr', async () => {
    const inputs = join(ernie, 'cases', 'text-only', 'inputs.safetensors');
    const common = ['generate', '--model', ernie, '--inputs', inputs, '--max-new-tokens', '2', '--device', 'cpu'];
    for (const [extra, why] of [
      [['--loop', 'gpu'], /--loop must be one of host, graph, got 'gpu'/],
      [['--loop', 'graph', '--loop-chunk', '0'], /--loop-chunk must be an integer >= 1, got '0'/],
      [['--loop-chunk', '4'], /--loop-chunk needs --loop graph/],
    ] as const) {
      const r = await cli([...common, ...extra]);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(why);
      expect(r.out).toBe('');
    }
  });
});
