// Both models read their HF-named inputs through ./inputs-check.ts: the same rules for dtype, shape and
// values, each error naming the input. Every per-token input of each model is tried as float32 (Granite
// ran a float32 attention_mask with logits off by 7) and short (a [1, 1] token-type tensor was not named).
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { float32, type HostTensor, int64 } from '@vlmkit/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERNIE_INPUT_NAMES } from './ernie/model.js';
import { ModelError } from './errors.js';
import { GRANITE_INPUT_NAMES } from './granite/model.js';
import { loadPretrained, type PretrainedModel } from './registry.js';
import { FIXTURES, readTensors } from './test-utils/fixtures.js';

async function refusal(run: () => Promise<unknown>): Promise<ModelError> {
  const e = await run().catch((x: unknown) => x);
  expect(e).toBeInstanceOf(ModelError);
  return e as ModelError;
}

const perToken = {
  'ernie-tiny': ['attention_mask', 'mm_token_type_ids', 'moe_mm_token_type_ids'],
  'granite-tiny': ['attention_mask', 'position_ids'],
};

describe.each([
  ['ernie-tiny', 'batch-padded', ERNIE_INPUT_NAMES],
  ['granite-tiny', 'batch-2', GRANITE_INPUT_NAMES],
] as const)('%s: every input checked by the shared rules', (model, name, accepted) => {
  let m: PretrainedModel;
  let inputs: Record<string, HostTensor>;
  beforeAll(async () => {
    m = await loadPretrained(join(FIXTURES, model), { device: 'cpu' });
    inputs = await readTensors(join(FIXTURES, model, 'cases', name, 'inputs.safetensors'));
  });
  afterAll(async () => m.release());

  it('the fixture case carries every per-token input it is tried with', () => {
    for (const k of perToken[model]) expect(inputs[k], k).toBeDefined();
  });

  it.each(perToken[model])('%s as float32, or shorter than input_ids, is BAD_INPUT naming it (forward and generate)', async (k) => {
    const t = inputs[k]!;
    const [B, S] = t.dims as [number, number];
    const asFloat = float32(Array.from(t.data as BigInt64Array, Number), [B, S]);
    for (const [bad, found] of [
      [asFloat, `float32 [${B}, ${S}]`],
      [int64([0], [1, 1]), 'int64 [1, 1]'],
    ] as const) {
      for (const run of [() => m.forwardNamed({ ...inputs, [k]: bad }), () => m.generate({ ...inputs, [k]: bad }, { maxNewTokens: 1 })]) {
        const e = await refusal(run);
        expect(e.code).toBe('BAD_INPUT');
        expect(e.message).toBe(`${k} must be int64 [${B}, ${S}] (the shape of input_ids), got ${found}`);
      }
    }
  });

  it('an input the model does not read is refused by name', async () => {
    const ids = inputs.input_ids!;
    const e = await refusal(() => m.forwardNamed({ ...inputs, token_type_ids: int64(new Array(ids.data.length).fill(0), [...ids.dims]) }));
    expect(e.code).toBe('BAD_INPUT');
    expect(e.message).toMatch(/does not read an input named token_type_ids: expected some of input_ids, attention_mask/);
    for (const k of Object.keys(inputs)) expect(accepted as readonly string[]).toContain(k);
  });

  it('input_ids [1, 0] and attention_mask values other than 0/1 are named', async () => {
    expect((await refusal(() => m.forwardNamed({ ...inputs, input_ids: int64([], [1, 0]) }))).message).toBe(
      'input_ids must hold at least one token per row, got [1, 0]',
    );
    const mask = BigInt64Array.from(inputs.attention_mask!.data as BigInt64Array);
    const last = mask.length - 1;
    mask[last] = 2n;
    const e = await refusal(() => m.forwardNamed({ ...inputs, attention_mask: int64(mask, [...inputs.attention_mask!.dims]) }));
    expect(e.message).toBe(`attention_mask[1, ${inputs.input_ids!.dims[1]! - 1}] is 2: mask values must be 0 (padding) or 1`);
  });
});

describe('input values blamed on the right input', () => {
  it('Granite image_sizes [0, 0] names image_sizes (was blamed on image_grid_pinpoints)', async () => {
    const m = await loadPretrained(join(FIXTURES, 'granite-tiny'), { device: 'cpu' });
    try {
      const inputs = await readTensors(join(FIXTURES, 'granite-tiny', 'cases', 'batch-2', 'inputs.safetensors'));
      const sizes = inputs.image_sizes!;
      const zero = int64([...Array.from(sizes.data as BigInt64Array, Number).slice(0, 2), 0, 0], [...sizes.dims]);
      const e = await refusal(() => m.forwardNamed({ ...inputs, image_sizes: zero }));
      expect(e.code).toBe('BAD_INPUT');
      expect(e.message).toBe('image_sizes[1] is [0, 0]: each of (height, width) must be at least 1');
    } finally {
      await m.release();
    }
  });

  describe('ERNIE', () => {
    let m: PretrainedModel;
    let inputs: Record<string, HostTensor>;
    beforeAll(async () => {
      m = await loadPretrained(join(FIXTURES, 'ernie-tiny'), { device: 'cpu' });
      inputs = await readTensors(join(FIXTURES, 'ernie-tiny', 'cases', 'batch-padded', 'inputs.safetensors'));
    });
    afterAll(async () => m.release());

    it('a masked row 0 over its image names image 0 at batch 0 (was "image 1 at batch 1")', async () => {
      const [B, S] = inputs.input_ids!.dims as [number, number];
      const ids = inputs.input_ids!.data as BigInt64Array;
      const mask = BigInt64Array.from(inputs.attention_mask!.data as BigInt64Array);
      // Mask from row 0's first image placeholder on (the rest of row 0 keeps real tokens before it).
      const mm = inputs.mm_token_type_ids!.data as BigInt64Array;
      const first = mm.indexOf(1n);
      expect(first).toBeGreaterThan(0);
      expect(first).toBeLessThan(S);
      mask.fill(0n, first, S);
      const e = await refusal(() => m.forwardNamed({ ...inputs, attention_mask: int64(mask, [B, S]) }));
      expect(e.code).toBe('BAD_INPUT');
      expect(e.message).toBe(
        `attention_mask[0, ${first}] is 0 on a placeholder of image 0 (batch 0): image placeholders must be attended (1); mask only padding`,
      );
      // The second image (row 1's first run) is named as image 1.
      const second = mm.findIndex((v, i) => i >= S && v === 1n);
      const mask1 = BigInt64Array.from(inputs.attention_mask!.data as BigInt64Array);
      mask1[second] = 0n;
      const e1 = await refusal(() => m.forwardNamed({ ...inputs, attention_mask: int64(mask1, [B, S]) }));
      expect(e1.message).toBe(
        `attention_mask[1, ${second - S}] is 0 on a placeholder of image 1 (batch 1): image placeholders must be attended (1); mask only padding`,
      );
      expect(ids[second]).toBe(ids[first]);
    });

    it('mm_token_type_ids that disagree with input_ids are refused where they differ', async () => {
      const [B, S] = inputs.input_ids!.dims as [number, number];
      const mm = BigInt64Array.from(inputs.mm_token_type_ids!.data as BigInt64Array);
      const i = mm.indexOf(1n);
      mm[i] = 0n;
      const e = await refusal(() => m.forwardNamed({ ...inputs, mm_token_type_ids: int64(mm, [B, S]) }));
      expect(e.message).toBe(
        `mm_token_type_ids[${Math.floor(i / S)}, ${i % S}] is 0 but input_ids there is an image placeholder: expected 1 (0 text, 1 image, 2 video placeholder, as the processor makes them)`,
      );
    });
  });
});

describe('generation past max_position_embeddings', () => {
  it('warns (as HF MaxLengthCriteria does) once a token is predicted from more positions than the config allows, not before', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vlmkit-maxpos-'));
    try {
      const src = join(FIXTURES, 'granite-tiny');
      const inputs = await readTensors(join(src, 'cases', 'batch-2', 'inputs.safetensors'));
      const S = inputs.input_ids!.dims[1]!;
      const config = JSON.parse(await readFile(join(src, 'config.json'), 'utf8')) as { text_config: Record<string, unknown> };
      config.text_config.max_position_embeddings = S + 2;
      await writeFile(join(dir, 'config.json'), JSON.stringify(config));
      for (const f of ['model.safetensors', 'generation_config.json']) await copyFile(join(src, f), join(dir, f));
      const m = await loadPretrained(dir, { device: 'cpu', cacheDir: dir });
      const warnings: Error[] = [];
      const listen = (w: Error) => warnings.push(w);
      process.on('warning', listen);
      try {
        // 3 new tokens: the last is predicted from S + 2 positions, the limit; 4: from S + 3, past it.
        const within = await m.generate(inputs, { maxNewTokens: 3, eos: [] });
        await new Promise((r) => setImmediate(r));
        expect(warnings).toEqual([]);
        const past = await m.generate(inputs, { maxNewTokens: 4, eos: [] });
        await new Promise((r) => setImmediate(r));
        expect(warnings.map((w) => [w.name, (w as Error & { code: string }).code, w.message])).toEqual([
          [
            'VlmkitWarning',
            'PAST_MAX_POSITION_EMBEDDINGS',
            `generation ran past max_position_embeddings (${S + 2}): the last token was predicted from ${S + 3} positions; expected at most ${S + 2}. The model was not trained on such lengths; output quality may degrade (HF warns and generates on).`,
          ],
        ]);
        // It runs on, as HF does: the first tokens are the ones generated within the limit.
        expect(past.tokens.map((t) => t.slice(0, 3))).toEqual(within.tokens);
      } finally {
        process.off('warning', listen);
        await m.release();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('pixel values and grids: layout and values checked, named', () => {
  it('Granite: a tile of another size, or pixel_values without image_sizes, is BAD_INPUT (a 32-px tile ran before)', async () => {
    const m = await loadPretrained(join(FIXTURES, 'granite-tiny'), { device: 'cpu' });
    try {
      const inputs = await readTensors(join(FIXTURES, 'granite-tiny', 'cases', 'batch-2', 'inputs.safetensors'));
      const [B, T, C, S] = inputs.pixel_values!.dims as [number, number, number, number];
      const small = float32(new Float32Array(B * T * C * 32 * 32), [B, T, C, 32, 32]);
      const e = await refusal(() => m.forwardNamed({ ...inputs, pixel_values: small }));
      expect(e.message).toBe(
        `pixel_values must be float32 [images, tiles, ${C}, ${S}, ${S}] or [tiles, ${C}, ${S}, ${S}], got float32 [${B}, ${T}, ${C}, 32, 32]`,
      );
      const { image_sizes: _, ...noSizes } = inputs;
      const ids = BigInt64Array.from(inputs.input_ids!.data as BigInt64Array).fill(1n);
      const e2 = await refusal(() => m.forwardNamed({ ...noSizes, input_ids: int64(ids, [...inputs.input_ids!.dims]) }));
      expect(e2.message).toBe('pixel_values is given but image_sizes is missing: it says how the pixels are laid out');
    } finally {
      await m.release();
    }
  });

  it('ERNIE: pixel rows of another width or rank, pixels without grids, grids the resampler cannot merge', async () => {
    const m = await loadPretrained(join(FIXTURES, 'ernie-tiny'), { device: 'cpu' });
    try {
      const inputs = await readTensors(join(FIXTURES, 'ernie-tiny', 'cases', 'images', 'inputs.safetensors'));
      const pv = inputs.pixel_values!;
      const [N, W] = pv.dims as [number, number];
      const data = pv.data as Float32Array;
      for (const [bad, found] of [
        [float32(data, [N * 2, W / 2]), `[${N * 2}, ${W / 2}]`],
        [float32(data, [N * W]), `[${N * W}]`],
      ] as const) {
        expect((await refusal(() => m.forwardNamed({ ...inputs, pixel_values: bad }))).message).toBe(
          `pixel_values must be float32 [patches, ${W}], got float32 ${found}`,
        );
      }
      // A text-only prompt (no placeholders to count) with pixels and no grids.
      const { image_grid_thw: _, mm_token_type_ids: _mm, moe_mm_token_type_ids: _moe, ...noGrids } = inputs;
      const text = int64(BigInt64Array.from(inputs.input_ids!.data as BigInt64Array).fill(1n), [...inputs.input_ids!.dims]);
      expect((await refusal(() => m.forwardNamed({ ...noGrids, input_ids: text }))).message).toBe(
        'pixel_values is given but image_grid_thw is missing: it says how the pixels are laid out',
      );
      const grids = Array.from(inputs.image_grid_thw!.data as BigInt64Array, Number);
      grids[1] = grids[1]! + 1;
      expect((await refusal(() => m.forwardNamed({ ...inputs, image_grid_thw: int64(grids, [grids.length / 3, 3]) }))).message).toBe(
        `image_grid_thw[0] is [${grids[0]}, ${grids[1]}, ${grids[2]}]: expected h and w multiples of spatial_merge_size (2), as the processor makes them`,
      );
      const video = await readTensors(join(FIXTURES, 'ernie-tiny', 'cases', 'video', 'inputs.safetensors'));
      const vg = Array.from(video.video_grid_thw!.data as BigInt64Array, Number);
      vg[0] = vg[0]! + 1;
      expect((await refusal(() => m.forwardNamed({ ...video, video_grid_thw: int64(vg, [1, 3]) }))).message).toBe(
        `video_grid_thw[0] is [${vg[0]}, ${vg[1]}, ${vg[2]}]: expected t a multiple of temporal_merge_size (2), h and w of spatial_merge_size (2), as the processor makes them`,
      );
    } finally {
      await m.release();
    }
  });
});
