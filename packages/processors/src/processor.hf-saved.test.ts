/**
 * Processor folders as HF 5.17 reads them (tools/processors/make_hf_saved_cases.py): folders
 * written by save_pretrained (image and video settings nested in processor_config.json), both
 * files disagreeing, files missing or not regular files, tokenizer_config.json add_bos_token /
 * add_eos_token, size dicts, a lone surrogate. Where HF processed the case, the outputs must be
 * HF's (ids exact, float tensors by sum and 33 samples); where HF raised, or where the case says
 * vlmkit cannot follow HF, a ProcessorError with the case's code whose message names the file and
 * field.
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProcessorError } from './errors.js';
import { Processor, type ProcessorOutputs } from './processor.js';
import { fixturePath, readJson } from './test-utils/fixtures.js';
import { readSafetensors } from './test-utils/safetensors.js';
import type { VideoFrames } from './video/ernie.js';

type Op = { op: 'delete' | 'mkdir'; file: string } | { op: 'write' | 'merge'; file: string; json: Record<string, unknown> };

interface FloatSummary {
  shape: number[];
  sum: number;
  abs_sum: number;
  samples: [number, number][];
}
interface IntValues {
  shape: number[];
  values: number[];
}

interface HfSavedCase {
  name: string;
  model: 'ernie' | 'granite';
  base: string;
  ops: Op[];
  why: string;
  media: 'image' | 'video' | 'none';
  prompt: string | null;
  /** The image, relative to test-fixtures/processors. */
  image: string;
  vlmkit: { code: string; mentions: string[] } | null;
  hf:
    | { error: { stage: string; type: string; message: string } }
    | { prompt: string; input_ids: number[]; tensors: Record<string, FloatSummary | IntValues> };
}

const index = readJson<{ image: string; question: string; cases: HfSavedCase[] }>('hf-saved', 'cases.json');
const root = await mkdtemp(join(tmpdir(), 'vlmkit-hf-saved-'));
afterAll(() => rm(root, { recursive: true, force: true }));

/** The case's folder: the base copied, then the recorded file operations, as the script applied them. */
async function materialize(c: HfSavedCase): Promise<string> {
  const dir = join(root, c.name);
  await cp(fixturePath(c.base), dir, { recursive: true, filter: (src) => !src.endsWith('/cases') });
  for (const op of c.ops) {
    const path = join(dir, op.file);
    if (op.op === 'delete') await rm(path);
    else if (op.op === 'mkdir') await mkdir(path);
    else if (op.op === 'write' || op.op === 'merge') {
      const base = op.op === 'merge' ? (JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>) : {};
      await writeFile(path, `${JSON.stringify({ ...base, ...op.json }, null, 2)}\n`);
    }
  }
  return dir;
}

function fixtureVideo(): VideoFrames {
  const t = readSafetensors(fixturePath('video/frames.safetensors')).frames!;
  const [n, height, width] = t.shape as [number, number, number];
  const size = height * width * 3;
  const data = t.data as Uint8Array;
  return { fps: 6, frames: Array.from({ length: n }, (_, i) => ({ width, height, data: data.subarray(i * size, (i + 1) * size) })) };
}

/** What HF's script did: load, template one user message with the image / video, process. */
async function run(c: HfSavedCase, dir: string): Promise<{ prompt: string; out: ProcessorOutputs }> {
  const processor = await Processor.fromPretrained(dir);
  const media = c.media === 'video' ? { type: 'video' as const } : { type: 'image' as const };
  const prompt =
    c.prompt ??
    processor.applyChatTemplate([{ role: 'user', content: [media, { type: 'text', text: index.question }] }], {
      addGenerationPrompt: true,
    });
  const out = await processor.process({
    text: prompt,
    images: c.media === 'image' ? [fixturePath(c.image)] : [],
    videos: c.media === 'video' ? [fixtureVideo()] : [],
  });
  return { prompt, out };
}

describe('processor folders read as HF 5.17 reads them', () => {
  it.each(index.cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const dir = await materialize(c);
    // A refusal is expected where HF raised, and where vlmkit cannot follow HF (the case says so).
    if ('error' in c.hf || c.vlmkit !== null) {
      const refusal = c.vlmkit;
      const hf = 'error' in c.hf ? `HF raised ${c.hf.error.type}: ${c.hf.error.message}` : 'vlmkit cannot follow HF here';
      expect(refusal, `${c.name}: ${hf}; the case must say what vlmkit throws`).not.toBeNull();
      const e = await run(c, dir).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e, `${c.name}: ${hf}`).toBeInstanceOf(ProcessorError);
      expect((e as ProcessorError).code).toBe(refusal!.code);
      for (const m of refusal!.mentions) expect((e as Error).message).toContain(m);
      return;
    }
    const { prompt, out } = await run(c, dir);
    expect(prompt).toBe(c.hf.prompt);
    expect(Array.from(out.input_ids.data, Number)).toEqual(c.hf.input_ids);
    const names = Object.keys(out).filter((k) => k !== 'input_ids' && k !== 'attention_mask');
    expect(names.sort()).toEqual(Object.keys(c.hf.tensors).sort());
    for (const [name, want] of Object.entries(c.hf.tensors)) {
      const got = out[name as keyof ProcessorOutputs]!;
      expect(got.dims, name).toEqual(want.shape);
      if ('values' in want) {
        expect(Array.from(got.data as BigInt64Array, Number), name).toEqual(want.values);
        continue;
      }
      const data = got.data as Float32Array;
      let sum = 0;
      let absSum = 0;
      for (const v of data) {
        sum += v;
        absSum += Math.abs(v);
      }
      // float32 rounding: 1e-5 per value, summed over the tensor.
      expect(Math.abs(sum - want.sum), `${name} sum`).toBeLessThan(1e-5 * data.length);
      expect(Math.abs(absSum - want.abs_sum), `${name} abs sum`).toBeLessThan(1e-5 * data.length);
      for (const [i, v] of want.samples) expect(Math.abs(data[i]! - v), `${name}[${i}]`).toBeLessThan(1e-5);
    }
  });
});

describe('processor settings vlmkit refuses by name before touching an image', () => {
  /** A processor fixture folder with its files patched, and config.json of the tiny checkpoint when asked. */
  async function folder(name: string, model: 'ernie' | 'granite', ops: Op[], withModelConfig = false): Promise<string> {
    const dir = await materialize({ name, model, base: model, ops } as HfSavedCase);
    if (withModelConfig) await cp(join(fixturePath('..'), `${model}-tiny`, 'config.json'), join(dir, 'config.json'));
    return dir;
  }
  async function loadError(dir: string): Promise<ProcessorError> {
    const e = await Processor.fromPretrained(dir).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ProcessorError);
    return e as ProcessorError;
  }

  it('a size.shortest_edge of 1e12 (ERNIE) is refused when loading, naming the field', async () => {
    const dir = await folder('huge-min-pixels', 'ernie', [
      { op: 'merge', file: 'preprocessor_config.json', json: { size: { shortest_edge: 1e12, longest_edge: 1e12 } } },
    ]);
    const e = await loadError(dir);
    expect(e.code).toBe('INVALID_PROCESSOR_CONFIG');
    expect(e.message).toMatch(/preprocessor_config\.json: size\.shortest_edge must be an integer in \[1, 16777216\]/);
  });

  it('image_grid_pinpoints [[12800, 12800]] (Granite) is refused when loading, naming the field', async () => {
    const dir = await folder('huge-pinpoint', 'granite', [
      { op: 'merge', file: 'preprocessor_config.json', json: { image_grid_pinpoints: [[12800, 12800]] } },
    ]);
    const e = await loadError(dir);
    expect(e.code).toBe('INVALID_PROCESSOR_CONFIG');
    expect(e.message).toContain('preprocessor_config.json: image_grid_pinpoints has [12800, 12800]');
  });

  it('pinpoints that cut an image into too many tiles are refused, naming the field', async () => {
    const dir = await folder('many-tiles', 'granite', [
      { op: 'merge', file: 'preprocessor_config.json', json: { image_grid_pinpoints: [[4096, 4096]] } },
    ]);
    expect((await loadError(dir)).message).toMatch(/image_grid_pinpoints with crop_size 64x64 cuts an image into up to 4097 tiles/);
  });

  it('a FIFO as preprocessor_config.json counts as absent (as HF os.path.isfile): refused, never opened', async () => {
    const dir = await folder('fifo', 'granite', [{ op: 'delete', file: 'preprocessor_config.json' }]);
    execFileSync('mkfifo', [join(dir, 'preprocessor_config.json')]);
    const e = await loadError(dir);
    expect(e.code).toBe('INVALID_PROCESSOR_CONFIG');
    expect(e.message).toContain('preprocessor_config.json is missing (or not a regular file)');
  }, 20_000);

  it("a strategy HF treats as config.json's (anything but 'default' keeps every feature) is no contradiction", async () => {
    const ops: Op[] = [{ op: 'merge', file: 'processor_config.json', json: { vision_feature_select_strategy: 'bogus' } }];
    const processor = await Processor.fromPretrained(await folder('granite-strategy-bogus', 'granite', ops, true));
    const out = await processor.process({ text: '<image>', images: [fixturePath(index.image)] });
    expect(out.image_sizes?.dims).toEqual([1, 2]);
  });

  it('Granite takes patch_size from processor_config.json only, as HF: none there refuses images even beside config.json', async () => {
    const dir = await folder(
      'granite-patch-size-from-config',
      'granite',
      [{ op: 'merge', file: 'processor_config.json', json: { patch_size: null } }],
      true,
    );
    const processor = await Processor.fromPretrained(dir);
    const e = await processor.process({ text: '<image>', images: [fixturePath(index.image)] }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ProcessorError);
    expect((e as Error).message).toContain('processor_config.json has no patch_size');
  });

  it.each([
    [
      'granite',
      { op: 'merge', file: 'processor_config.json', json: { patch_size: 16 } },
      'processor_config.json patch_size is 16 but config.json vision_config.patch_size is 8',
    ],
    [
      'granite',
      { op: 'merge', file: 'processor_config.json', json: { downsample_rate: '1/4' } },
      'processor_config.json downsample_rate is 0.25 but config.json downsample_rate is 0.5',
    ],
    [
      'granite',
      {
        op: 'merge',
        file: 'preprocessor_config.json',
        json: {
          image_grid_pinpoints: [
            [64, 128],
            [128, 64],
          ],
        },
      },
      'preprocessor_config.json image_grid_pinpoints is',
    ],
    [
      'granite',
      { op: 'merge', file: 'processor_config.json', json: { vision_feature_select_strategy: 'default' } },
      "vision_feature_select_strategy is \"'default' (one feature dropped)\" but config.json vision_feature_select_strategy is \"not 'default'",
    ],
    [
      'ernie',
      { op: 'merge', file: 'preprocessor_config.json', json: { merge_size: 1 } },
      'preprocessor_config.json merge_size is 1 but config.json vision_config.spatial_merge_size is 2',
    ],
    [
      'ernie',
      { op: 'merge', file: 'preprocessor_config.json', json: { temporal_patch_size: 2 } },
      'temporal_patch_size is 6 but config.json vision_config.in_channels is 3',
    ],
  ] as const)('%s: a processor setting that contradicts config.json is refused with images, naming both (%j)', async (model, op, message) => {
    const dir = await folder(`conflict-${model}-${Object.keys(op.json)[0]}`, model, [op as Op], true);
    const processor = await Processor.fromPretrained(dir);
    // Text alone does not depend on the image settings, as in HF.
    await expect(processor.process({ text: 'hi' })).resolves.toBeDefined();
    const text = processor.tokenizer.specialTokens.image_token!;
    const e = await processor.process({ text, images: [fixturePath(index.image)] }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ProcessorError);
    expect((e as ProcessorError).code).toBe('INVALID_PROCESSOR_CONFIG');
    expect((e as Error).message).toContain(message);
  });
});
