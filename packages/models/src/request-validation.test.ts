/**
 * Request validation tables: every input of both models (and the generation options) tried with
 * bad variants — missing, wrong dtype, wrong rank or shape, values out of range, inputs that
 * disagree with each other. Each must be refused with a typed ModelError whose message names the
 * input; then the same model must still answer the good request exactly as before (recovery:
 * logits bit-identical, generated ids equal), so a refused request leaves no state behind.
 *
 * Not errors, as in HF: moe_mm_token_type_ids that disagree with input_ids (HF routes by the given
 * tensor), negative position_ids (rotary of any position), Granite pixel_values [N, C, H, W] (HF
 * accepts the tiles already flattened).
 */
import { join } from 'node:path';
import { float32, type HostTensor, hostTensor, int64 } from '@vlmkit/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelError } from './errors.js';
import type { GenerateOptions } from './generate.js';
import { loadPretrained, type PretrainedModel } from './registry.js';
import { FIXTURES, readTensors } from './test-utils/fixtures.js';

type Inputs = Record<string, HostTensor>;
/** [label, the input (or option) the error must name, the bad request made from the good one] */
type Case = [string, string, (good: Inputs) => Inputs];
type OptionCase = [string, string, Partial<Record<keyof GenerateOptions, unknown>>];

const i64 = (t: HostTensor) => Array.from(t.data as BigInt64Array, Number);
const f32 = (t: HostTensor) => Array.from(t.data as Float32Array);
const without = (inputs: Inputs, key: string): Inputs => Object.fromEntries(Object.entries(inputs).filter(([k]) => k !== key));
/** The same values as another dtype. */
const asFloat = (t: HostTensor) => float32(i64(t), [...t.dims]);
const asInt32 = (t: HostTensor) => hostTensor('int32', Int32Array.from(i64(t)), [...t.dims]);
const flat = (t: HostTensor) => hostTensor(t.dtype, t.data as never, [t.data.length]);
/** An int64 tensor with entry i replaced. */
function setAt(t: HostTensor, i: number, v: number): HostTensor {
  const d = BigInt64Array.from(t.data as BigInt64Array);
  d[i < 0 ? d.length + i : i] = BigInt(v);
  return int64(d, [...t.dims]);
}

/** Cases for inputs both models read the same way. */
function common(vocab: number): Case[] {
  return [
    ['input_ids missing', 'input_ids', (g) => without(g, 'input_ids')],
    ['input_ids float32', 'input_ids', (g) => ({ ...g, input_ids: asFloat(g.input_ids!) })],
    ['input_ids int32', 'input_ids', (g) => ({ ...g, input_ids: asInt32(g.input_ids!) })],
    ['input_ids 1-D', 'input_ids', (g) => ({ ...g, input_ids: flat(g.input_ids!) })],
    ['input_ids [1, 0]', 'input_ids', (g) => ({ ...g, input_ids: int64([], [1, 0]) })],
    ['input_ids with a negative id', 'input_ids', (g) => ({ ...g, input_ids: setAt(g.input_ids!, 0, -5) })],
    ['input_ids with id = vocab_size', 'input_ids', (g) => ({ ...g, input_ids: setAt(g.input_ids!, 0, vocab) })],
    ['attention_mask float32', 'attention_mask', (g) => ({ ...g, attention_mask: asFloat(g.attention_mask!) })],
    ['attention_mask shorter than input_ids', 'attention_mask', (g) => ({ ...g, attention_mask: int64([1], [1, 1]) })],
    ['attention_mask 1-D', 'attention_mask', (g) => ({ ...g, attention_mask: flat(g.attention_mask!) })],
    ['attention_mask value 2', 'attention_mask', (g) => ({ ...g, attention_mask: setAt(g.attention_mask!, -1, 2) })],
    ['attention_mask value -1', 'attention_mask', (g) => ({ ...g, attention_mask: setAt(g.attention_mask!, -1, -1) })],
    [
      'attention_mask all 0',
      'attention_mask',
      (g) => ({ ...g, attention_mask: int64(new Array(g.attention_mask!.data.length).fill(0), [...g.attention_mask!.dims]) }),
    ],
    [
      'pixel_values int64',
      'pixel_values',
      (g) => ({ ...g, pixel_values: int64(f32(g.pixel_values!).map(Math.round), [...g.pixel_values!.dims]) }),
    ],
    ['an input the model does not read', 'token_type_ids', (g) => ({ ...g, token_type_ids: g.input_ids! })],
  ];
}

const ERNIE_CASES: Case[] = [
  ...common(256),
  ['pixel_values missing with image_grid_thw', 'pixel_values', (g) => without(g, 'pixel_values')],
  ['pixel_values 1-D', 'pixel_values', (g) => ({ ...g, pixel_values: flat(g.pixel_values!) })],
  [
    'pixel_values with fewer patch rows than the grids',
    'pixel_values',
    (g) => {
      const [n, c] = g.pixel_values!.dims as [number, number];
      return { ...g, pixel_values: float32(f32(g.pixel_values!).slice(0, (n - 4) * c), [n - 4, c]) };
    },
  ],
  [
    'pixel_values rows of the wrong width',
    'pixel_values',
    (g) => {
      const [n, c] = g.pixel_values!.dims as [number, number];
      return { ...g, pixel_values: float32(f32(g.pixel_values!).slice(0, n * (c - 3)), [n, c - 3]) };
    },
  ],
  ['image_grid_thw missing with pixel_values', 'image_grid_thw', (g) => without(g, 'image_grid_thw')],
  ['image_grid_thw float32', 'image_grid_thw', (g) => ({ ...g, image_grid_thw: asFloat(g.image_grid_thw!) })],
  ['image_grid_thw [N, 2]', 'image_grid_thw', (g) => ({ ...g, image_grid_thw: int64(i64(g.image_grid_thw!).slice(0, 4), [2, 2]) })],
  ['image_grid_thw with a 0', 'image_grid_thw', (g) => ({ ...g, image_grid_thw: setAt(g.image_grid_thw!, 1, 0) })],
  ['image_grid_thw with a negative size', 'image_grid_thw', (g) => ({ ...g, image_grid_thw: setAt(g.image_grid_thw!, 2, -6) })],
  [
    'image_grid_thw with an odd h (not a multiple of the merge size)',
    'image_grid_thw',
    (g) => ({ ...g, image_grid_thw: setAt(g.image_grid_thw!, 1, 3) }),
  ],
  [
    'image_grid_thw for one image of two',
    'image_grid_thw',
    (g) => ({ ...g, image_grid_thw: int64(i64(g.image_grid_thw!).slice(0, 3), [1, 3]) }),
  ],
  // [1, 4, 6] -> [1, 4, 4]: 16 patches and 4 tokens where the pixels hold 24 and the prompt 6 placeholders.
  [
    'image_grid_thw whose patches disagree with the pixels and placeholders',
    'image_grid_thw',
    (g) => ({ ...g, image_grid_thw: setAt(g.image_grid_thw!, 2, 4) }),
  ],
  ['mm_token_type_ids float32', 'mm_token_type_ids', (g) => ({ ...g, mm_token_type_ids: asFloat(g.mm_token_type_ids!) })],
  ['mm_token_type_ids shorter than input_ids', 'mm_token_type_ids', (g) => ({ ...g, mm_token_type_ids: int64([0], [1, 1]) })],
  ['mm_token_type_ids value 3', 'mm_token_type_ids', (g) => ({ ...g, mm_token_type_ids: setAt(g.mm_token_type_ids!, 0, 3) })],
  [
    'mm_token_type_ids disagreeing with input_ids',
    'mm_token_type_ids',
    (g) => {
      const i = i64(g.mm_token_type_ids!).indexOf(1);
      return { ...g, mm_token_type_ids: setAt(g.mm_token_type_ids!, i, 0) };
    },
  ],
  ['moe_mm_token_type_ids float32', 'moe_mm_token_type_ids', (g) => ({ ...g, moe_mm_token_type_ids: asFloat(g.moe_mm_token_type_ids!) })],
  ['moe_mm_token_type_ids shorter than input_ids', 'moe_mm_token_type_ids', (g) => ({ ...g, moe_mm_token_type_ids: int64([0], [1, 1]) })],
  [
    // 0 text, 1 image, 2 video (HF's processor; the model routes any non-zero to the vision experts).
    'moe_mm_token_type_ids value 3',
    'moe_mm_token_type_ids',
    (g) => ({ ...g, moe_mm_token_type_ids: setAt(g.moe_mm_token_type_ids!, 0, 3) }),
  ],
  ['video_grid_thw without pixel_values_videos', 'pixel_values_videos', (g) => ({ ...g, video_grid_thw: int64([2, 4, 4], [1, 3]) })],
  ['pixel_values_videos without video_grid_thw', 'video_grid_thw', (g) => ({ ...g, pixel_values_videos: g.pixel_values! })],
  [
    'a video with no placeholders in input_ids',
    'video',
    (g) => ({ ...g, pixel_values_videos: float32(new Float32Array(32 * 588), [32, 588]), video_grid_thw: int64([2, 4, 4], [1, 3]) }),
  ],
  [
    'a video of 0 frames',
    'video_grid_thw',
    (g) => ({ ...g, pixel_values_videos: float32([], [0, 588]), video_grid_thw: int64([0, 4, 4], [1, 3]) }),
  ],
  ['position_ids (ERNIE computes 3D positions itself)', 'position_ids', (g) => ({ ...g, position_ids: g.input_ids! })],
];

const GRANITE_CASES: Case[] = [
  ...common(256),
  ['pixel_values missing with image_sizes', 'pixel_values', (g) => without(g, 'pixel_values')],
  [
    'pixel_values with a tile fewer than the image size needs',
    'pixel_values',
    (g) => {
      const [b, n, c, h, w] = g.pixel_values!.dims as number[];
      return { ...g, pixel_values: float32(f32(g.pixel_values!).slice(0, (n! - 1) * c! * h! * w!), [b!, n! - 1, c!, h!, w!]) };
    },
  ],
  [
    'pixel_values tiles of 32 x 32 (the tower takes 64)',
    'pixel_values',
    (g) => {
      const [b, n, c] = g.pixel_values!.dims as number[];
      return { ...g, pixel_values: float32(new Float32Array(b! * n! * c! * 32 * 32), [b!, n!, c!, 32, 32]) };
    },
  ],
  [
    'pixel_values with 1 channel',
    'pixel_values',
    (g) => {
      const [b, n, , h, w] = g.pixel_values!.dims as number[];
      return { ...g, pixel_values: float32(new Float32Array(b! * n! * h! * w!), [b!, n!, 1, h!, w!]) };
    },
  ],
  ['image_sizes missing with pixel_values', 'image_sizes', (g) => without(g, 'image_sizes')],
  ['image_sizes float32', 'image_sizes', (g) => ({ ...g, image_sizes: asFloat(g.image_sizes!) })],
  ['image_sizes [N, 3]', 'image_sizes', (g) => ({ ...g, image_sizes: int64([...i64(g.image_sizes!), 1], [1, 3]) })],
  ['image_sizes [0, 0]', 'image_sizes', (g) => ({ ...g, image_sizes: int64([0, 0], [1, 2]) })],
  ['image_sizes negative', 'image_sizes', (g) => ({ ...g, image_sizes: int64([-70, 160], [1, 2]) })],
  ['image_sizes whose placeholders disagree with input_ids', 'image_sizes', (g) => ({ ...g, image_sizes: int64([160, 70], [1, 2]) })],
  ['image_sizes of 10^9 pixels a side', 'image_sizes', (g) => ({ ...g, image_sizes: int64([1e9, 1e9], [1, 2]) })],
  ['position_ids float32', 'position_ids', (g) => ({ ...g, position_ids: asFloat(g.input_ids!) })],
  ['position_ids shorter than input_ids', 'position_ids', (g) => ({ ...g, position_ids: int64([0], [1, 1]) })],
  ['mm_token_type_ids (an ERNIE input)', 'mm_token_type_ids', (g) => ({ ...g, mm_token_type_ids: g.input_ids! })],
];

const OPTION_CASES: OptionCase[] = [
  ['maxNewTokens -1', 'maxNewTokens', { maxNewTokens: -1 }],
  ['maxNewTokens 1.5', 'maxNewTokens', { maxNewTokens: 1.5 }],
  ['maxNewTokens NaN', 'maxNewTokens', { maxNewTokens: Number.NaN }],
  ['maxNewTokens missing', 'maxNewTokens', { maxNewTokens: undefined }],
  ['maxNewTokens "2"', 'maxNewTokens', { maxNewTokens: '2' }],
  ['temperature -1', 'temperature', { temperature: -1 }],
  ['temperature NaN', 'temperature', { temperature: Number.NaN }],
  ['temperature Infinity', 'temperature', { temperature: Number.POSITIVE_INFINITY }],
  ['temperature "1"', 'temperature', { temperature: '1' }],
  ['topP 0', 'topP', { topP: 0 }],
  ['topP 1.5', 'topP', { topP: 1.5 }],
  ['topP NaN', 'topP', { topP: Number.NaN }],
  ['topP "0.5"', 'topP', { topP: '0.5' }],
  ['topK -1', 'topK', { topK: -1 }],
  ['topK 1.5', 'topK', { topK: 1.5 }],
  ['seed NaN', 'seed', { seed: Number.NaN }],
  ['seed 1.5', 'seed', { seed: 1.5 }],
  ['seed "7"', 'seed', { seed: '7' }],
  ['eos -1', 'eos', { eos: -1 }],
  ['eos 1.5', 'eos', { eos: 1.5 }],
  ['eos = vocab_size (never generated)', 'eos', { eos: 256 }],
  ['eos list with a bad id', 'eos', { eos: [2, -3] }],
  ['eos "2"', 'eos', { eos: '2' }],
  ['padTokenId -1', 'padTokenId', { padTokenId: -1 }],
  ['padTokenId = vocab_size', 'padTokenId', { padTokenId: 256 }],
  ['padTokenId 0.5', 'padTokenId', { padTokenId: 0.5 }],
];

async function refusal(run: () => Promise<unknown>): Promise<unknown> {
  return run().then(
    () => undefined,
    (e: unknown) => e,
  );
}

function expectNamed(e: unknown, name: string): void {
  expect(e, `refused with a typed error naming ${name}`).toBeInstanceOf(ModelError);
  expect((e as ModelError).message).toContain(name);
}

describe.each([
  ['ernie-tiny', 'images', ERNIE_CASES],
  ['granite-tiny', 'anyres', GRANITE_CASES],
] as const)('%s: request validation and recovery', (model, caseName, cases) => {
  let m: PretrainedModel;
  let good: Inputs;
  let logits: Float32Array;
  let ids: number[][];
  const greedy = { maxNewTokens: 3, eos: [] as number[] };
  beforeAll(async () => {
    m = await loadPretrained(join(FIXTURES, model), { device: 'cpu' });
    good = await readTensors(join(FIXTURES, model, 'cases', caseName, 'inputs.safetensors'));
    logits = (await m.forwardNamed(good)).logits!.data as Float32Array;
    ids = (await m.generate(good, greedy)).tokens;
  });
  afterAll(async () => m.release());

  it.each(cases)('%s: refused naming %s', async (_label, name, bad) => {
    const e = await refusal(() => m.forwardNamed(bad(good)));
    expectNamed(e, name);
  });

  it.each(OPTION_CASES)('generate with %s: refused naming %s', async (_label, name, options) => {
    const e = await refusal(() => m.generate(good, { ...greedy, ...options } as GenerateOptions));
    expect(e, `refused with a typed error naming ${name}`).toBeInstanceOf(ModelError);
    expect((e as ModelError).code).toBe('BAD_GENERATION_OPTIONS');
    expect((e as ModelError).message).toContain(name);
  });

  it.runIf(model === 'granite-tiny')(
    'pixel_values [N, C, H, W] (tiles flattened, as HF accepts) give the same logits as [B, N, C, H, W]',
    async () => {
      const [, n, c, h, w] = good.pixel_values!.dims as number[];
      const flatTiles = hostTensor('float32', good.pixel_values!.data as Float32Array, [n!, c!, h!, w!]);
      const out = (await m.forwardNamed({ ...good, pixel_values: flatTiles })).logits!.data as Float32Array;
      expect(
        Buffer.from(out.buffer, out.byteOffset, out.byteLength).equals(Buffer.from(logits.buffer, logits.byteOffset, logits.byteLength)),
      ).toBe(true);
    },
  );

  it('after every refusal above, the good request gets the same answer: logits bit-identical, same ids', async () => {
    for (const [, , bad] of cases) await refusal(() => m.forwardNamed(bad(good)));
    for (const [, , options] of OPTION_CASES) await refusal(() => m.generate(good, { ...greedy, ...options } as GenerateOptions));
    const again = (await m.forwardNamed(good)).logits!.data as Float32Array;
    expect(again.length).toBe(logits.length);
    expect(
      Buffer.from(again.buffer, again.byteOffset, again.byteLength).equals(
        Buffer.from(logits.buffer, logits.byteOffset, logits.byteLength),
      ),
    ).toBe(true);
    expect((await m.generate(good, greedy)).tokens).toEqual(ids);
  });
});
