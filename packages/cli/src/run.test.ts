import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURE_DIR, loadPretrained, type PretrainedModel, readNamedTensors } from '@vlmkit/models';
import { Processor } from '@vlmkit/processors';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { type MainIo, main } from './main.js';

const PROCESSORS = join(FIXTURE_DIR, 'processors');
const IMAGES = join(PROCESSORS, 'images');
const FRAMES = join(PROCESSORS, 'video', 'frames.safetensors');
const SUMMARY = /^-- (\d+) prompt tokens, (\d+) new tokens \((stop|length)\), time to first token [\d.]+ ms, [\d.]+ tokens\/s, device cpu$/;

async function cli(argv: string[], io: MainIo = { tty: false, err: (_: string) => {} }): Promise<string> {
  let text = '';
  const code = await main(
    argv,
    (s) => {
      text += s;
    },
    io,
  );
  expect(code).toBe(0);
  return text;
}

/** Text output: the streamed answer, a newline, the summary line. */
function splitAnswer(text: string): { answer: string; summary: RegExpExecArray } {
  expect(text.endsWith('\n')).toBe(true);
  const cut = text.lastIndexOf('\n', text.length - 2);
  const summary = SUMMARY.exec(text.slice(cut + 1, -1));
  expect(summary, text).not.toBeNull();
  return { answer: text.slice(0, cut), summary: summary! };
}

/**
 * The reference: HF's processor outputs for the same message (a processor fixture case) through
 * generate(), decoded as the stream decodes (special tokens skipped).
 */
async function reference(model: PretrainedModel, family: string, name: string, maxNewTokens: number) {
  const inputs = await readNamedTensors(join(PROCESSORS, family, 'cases', name, 'expected.safetensors'));
  const ids = (await model.generate(inputs, { maxNewTokens })).tokens[0]!;
  const text = await (await model.processor()).decode(ids, { skipSpecialTokens: true });
  return { ids, text, promptTokens: inputs.input_ids!.dims[1]! };
}

// What each processor fixture case's message holds: images (or the video) first, then the text.
const CASES = {
  ernie: [
    { name: 'image-photo', media: ['--image', join(IMAGES, 'photo.jpg')], prompt: 'Describe this image.' },
    { name: 'image-exif-rot6', media: ['--image', join(IMAGES, 'exif-rot6.jpg')], prompt: 'Describe this image.' },
    { name: 'video', media: ['--video', FRAMES], prompt: 'Describe what happens in this video.' },
  ],
  granite: [
    { name: 'image-photo', media: ['--image', join(IMAGES, 'photo.jpg')], prompt: 'Describe this image.' },
    {
      name: 'two-images',
      media: ['--image', join(IMAGES, 'tiny.png'), '--image', join(IMAGES, 'gray.png')],
      prompt: 'Compare the two images.',
    },
  ],
} as const;

for (const [family, checkpoint] of [
  ['ernie', 'ernie-tiny'],
  ['granite', 'granite-tiny'],
] as const) {
  const dir = join(FIXTURE_DIR, checkpoint);
  describe(`vlmkit run / preprocess on ${checkpoint}`, () => {
    let model: PretrainedModel;
    beforeAll(async () => {
      model = await loadPretrained(dir, { device: 'cpu' });
    });
    afterAll(async () => {
      await model.release();
    });

    for (const c of CASES[family]) {
      it(`run streams the text of the ids generate() gives on HF's processor outputs, then a summary line (${c.name})`, async () => {
        const text = await cli(['run', '--model', dir, ...c.media, '--prompt', c.prompt, '--max-new-tokens', '10', '--device', 'cpu']);
        const want = await reference(model, family, c.name, 10);
        const { answer, summary } = splitAnswer(text);
        expect(answer).toBe(want.text);
        expect(Number(summary[1])).toBe(want.promptTokens);
        expect(Number(summary[2])).toBe(want.ids.length);
        expect(summary[3]).toBe(want.ids.at(-1) === 2 ? 'stop' : 'length');
      });

      it(`preprocess writes what HF's processor returns, under HF's names (${c.name})`, async () => {
        const out = join(await mkdtemp(join(tmpdir(), 'vlmkit-pre-')), 'inputs.safetensors');
        const text = await cli(['preprocess', '--model', dir, ...c.media, '--prompt', c.prompt, '--out', out]);
        expect(text).toMatch(/wrote input_ids \[1, \d+\], attention_mask/);
        const got = await readNamedTensors(out);
        const want = await readNamedTensors(join(PROCESSORS, family, 'cases', c.name, 'expected.safetensors'));
        expect(Object.keys(got).sort()).toEqual(Object.keys(want).sort());
        for (const [k, w] of Object.entries(want)) {
          const g = got[k]!;
          expect([k, g.dtype, g.dims]).toEqual([k, w.dtype, w.dims]);
          if (w.dtype === 'float32') {
            const a = g.data as Float32Array;
            const b = w.data as Float32Array;
            let diff = 0;
            for (let i = 0; i < b.length; i++) diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
            expect(diff, k).toBeLessThanOrEqual(1e-5);
          } else {
            expect(Array.from(g.data as BigInt64Array), k).toEqual(Array.from(w.data as BigInt64Array));
          }
        }
      });
    }

    it('run --json prints JSON lines: load progress, text pieces, a summary with the ids', async () => {
      const c = CASES[family][0];
      const text = await cli(['run', '--model', dir, ...c.media, '--prompt', c.prompt, '--max-new-tokens', '6', '--json']);
      const lines = text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const progress = lines.filter((l) => l.type === 'progress');
      expect(progress.map((p) => p.stage)).toEqual([
        'weights',
        'weights',
        'build',
        'build',
        'session',
        'session',
        'build',
        'build',
        'session',
        'session',
      ]);
      expect(progress.at(-1)).toMatchObject({ done: 5, total: 5 });
      const pieces = lines.filter((l) => l.type === 'text').map((l) => l.text as string);
      const summary = lines.at(-1)!;
      expect(summary.type).toBe('summary');
      expect(lines.filter((l) => !['progress', 'text', 'summary'].includes(l.type as string))).toEqual([]);
      const want = await reference(model, family, c.name, 6);
      expect(summary.tokens).toEqual(want.ids);
      expect(pieces.join('')).toBe(want.text);
      expect(summary).toMatchObject({ text: want.text, promptTokens: want.promptTokens, newTokens: want.ids.length, device: 'cpu' });
      for (const k of ['timeToFirstTokenMs', 'tokensPerSecond', 'totalMs']) expect(typeof summary[k]).toBe('number');
    });
  });
}

describe('vlmkit run on a terminal, and the demo', () => {
  it('draws load progress bars on stderr when stdout is a terminal; stdout holds only the answer and summary', async () => {
    const dir = join(FIXTURE_DIR, 'ernie-tiny');
    const argv = ['run', '--model', dir, '--image', join(IMAGES, 'tiny.png'), '--prompt', 'Hi', '--max-new-tokens', '4'];
    let err = '';
    const onTty = await cli(argv, {
      tty: true,
      err: (s) => {
        err += s;
      },
    });
    expect(err).toMatch(/\[#{5}\.{19}\] 1\/5 building graph ernie-vision \(or verifying the cached one\) [\d.]+ s/);
    expect(err).toMatch(/\[#{14}\.{10}\] 3\/5 building graph ernie-decoder/);
    expect(err).toMatch(/\[#{19}\.{5}\] 4\/5 creating session ernie-decoder/);
    expect(err.endsWith('\r\x1b[2K')).toBe(true);
    let quiet = '';
    const piped = await cli(argv, {
      tty: false,
      err: (s) => {
        quiet += s;
      },
    });
    expect(quiet).toBe('');
    expect(splitAnswer(onTty).answer).toBe(splitAnswer(piped).answer);
    expect(onTty.includes('\x1b')).toBe(false);
  });

  it('a first load that quantizes: the bar shows the checkpoint file read and each layer; a log gets one line per step', async () => {
    const dir = join(FIXTURE_DIR, 'ernie-tiny');
    const cacheDir = await mkdtemp(join(tmpdir(), 'vlmkit-run-progress-'));
    const argv = ['run', '--model', dir, '--prompt', 'Hi', '--max-new-tokens', '2', '--quantize', 'int8', '--cache-dir', cacheDir];
    let err = '';
    await cli(argv, {
      tty: true,
      err: (s) => {
        err += s;
      },
    });
    const draws = err.split('\r\x1b[2K').filter((d) => d !== '');
    // Each of the tiny decoder's 4 layers drawn as the build's reads reach it (and again at the timer's ticks),
    // with the bytes of model.safetensors read so far.
    const layers = draws.filter((d) => d.includes('quantizing'));
    const shown = layers.map((d) => /quantizing model\.layers layer (\d+)\/4$/.exec(d)?.[1]);
    expect(new Set(shown)).toEqual(new Set(['1', '2', '3', '4']));
    const read = layers.map((d) => /3\/5 building graph ernie-decoder .* s: reading model\.safetensors ([\d.]+) of ([\d.]+) MB/.exec(d)!);
    const bytes = read.map((m) => Number(m[1]));
    expect(bytes.every((b, i) => b <= Number(read[i]![2]) && (i === 0 || b >= bytes[i - 1]!))).toBe(true);
    expect(bytes.at(-1)).toBeGreaterThan(0);
    // stderr a log, not a terminal (stdout still one): no redraws, one line per step as it starts.
    let log = '';
    await cli(argv, {
      tty: true,
      errTty: false,
      err: (s) => {
        log += s;
      },
    });
    expect(log).toBe(
      [
        'vlmkit: 0/5 reading and mapping weights',
        'vlmkit: 1/5 building graph ernie-vision (or verifying the cached one)',
        'vlmkit: 2/5 creating session ernie-vision',
        'vlmkit: 3/5 building graph ernie-decoder (or verifying the cached one)',
        'vlmkit: 4/5 creating session ernie-decoder',
        '',
      ].join('\n'),
    );
  });

  it('demo (what pnpm demo runs) answers about photo.jpg on the tiny ERNIE: the text of generate() on HF processor outputs', async () => {
    const text = await cli(['demo', '--device', 'cpu']);
    const [header, ...rest] = text.split('\n');
    expect(header).toMatch(/ernie-tiny: a tiny ERNIE-4.5-VL with random weights \(the answer is noise\)$/);
    const model = await loadPretrained(join(FIXTURE_DIR, 'ernie-tiny'), { device: 'cpu' });
    try {
      const want = await reference(model, 'ernie', 'image-photo', 24);
      const { answer, summary } = splitAnswer(rest.join('\n'));
      expect(answer).toBe(want.text);
      expect(Number(summary[2])).toBe(want.ids.length);
    } finally {
      await model.release();
    }
  });

  it('--video takes a video file too: preprocess of clip.mp4 equals that of its decoded frames and HF', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-pre-'));
    const base = ['preprocess', '--model', join(FIXTURE_DIR, 'ernie-tiny'), '--prompt', 'Describe what happens in this video.'];
    await cli([...base, '--video', join(PROCESSORS, 'video', 'clip.mp4'), '--out', join(dir, 'file.safetensors')]);
    const got = await readNamedTensors(join(dir, 'file.safetensors'));
    const want = await readNamedTensors(join(PROCESSORS, 'ernie', 'cases', 'video', 'expected.safetensors'));
    expect(Object.keys(got).sort()).toEqual(Object.keys(want).sort());
    expect(Array.from(got.input_ids!.data as BigInt64Array)).toEqual(Array.from(want.input_ids!.data as BigInt64Array));
    expect(Array.from(got.video_grid_thw!.data as BigInt64Array)).toEqual(Array.from(want.video_grid_thw!.data as BigInt64Array));
    const a = got.pixel_values_videos!.data as Float32Array;
    const b = want.pixel_values_videos!.data as Float32Array;
    expect(a.length).toBe(b.length);
    expect(a.every((x, i) => Math.abs(x - b[i]!) <= 1e-5)).toBe(true);
  });

  it("run reads the model directory's processor once: the check before the load is the one chat uses", async () => {
    const spy = vi.spyOn(Processor, 'fromPretrained');
    try {
      const text = await cli([
        'run',
        '--model',
        join(FIXTURE_DIR, 'ernie-tiny'),
        '--prompt',
        'Hi',
        '--max-new-tokens',
        '2',
        '--device',
        'cpu',
      ]);
      expect(text).toMatch(/prompt tokens/);
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('run fails before loading the model when the directory has no processor files or an image is missing', async () => {
    const image = join(IMAGES, 'photo.jpg');
    const noTokenizer = ['run', '--model', join(FIXTURE_DIR, 'ernie-tiny-bf16'), '--image', image, '--prompt', 'x'];
    const err = (await main(noTokenizer, () => {}).catch((e: unknown) => e)) as Error & { code?: string };
    expect(err.code).toBe('TOKENIZER_ERROR');
    expect(err.message).toMatch(/tokenizer\.json/);
    let text = '';
    const missing = ['run', '--model', join(FIXTURE_DIR, 'ernie-tiny'), '--image', join(IMAGES, 'nope.jpg'), '--prompt', 'x', '--json'];
    const code = await main(missing, () => {}, {
      err: (s) => {
        text += s;
      },
    });
    expect(code).toBe(2);
    expect(text).toMatch(/^vlmkit: cannot read .*nope\.jpg/);
    expect(text).not.toMatch(/"type":"progress"/);
  });

  it("run --video on a family without video support is refused before the load, by the spec's flag", async () => {
    let text = '';
    let stdout = '';
    const argv = ['run', '--model', join(FIXTURE_DIR, 'granite-tiny'), '--video', FRAMES, '--prompt', 'x', '--json'];
    const code = await main(
      argv,
      (s) => {
        stdout += s;
      },
      {
        err: (s) => {
          text += s;
        },
      },
    );
    expect(code).toBe(2);
    expect(text).toMatch(/^vlmkit: --video: Granite 4 Vision takes images only, not videos/);
    expect(stdout).not.toMatch(/"type":"progress"/);
  });

  it('--video with a .safetensors lacking uint8 frames [N, H, W, 3] is a usage error', async () => {
    let text = '';
    const argv = ['preprocess', '--model', join(FIXTURE_DIR, 'ernie-tiny'), '--prompt', 'x', '--out', join(tmpdir(), 'x.safetensors')];
    const notFrames = join(PROCESSORS, 'ernie', 'cases', 'video', 'expected.safetensors');
    const code = await main([...argv, '--video', notFrames], () => {}, {
      err: (s) => {
        text += s;
      },
    });
    expect(code).toBe(2);
    expect(text).toMatch(/^vlmkit: .*expected a tensor 'frames' uint8 \[N, H, W, 3\]/);
  });
});
