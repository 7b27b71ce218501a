import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelError } from '../errors.js';
import { fixtureCases, readTensors, relError } from '../test-utils/fixtures.js';
import { Ernie45VL } from './model.js';

// HF 5.17 wrote these fixtures: follow HF where the references differ (M-RoPE after long videos, vision eps).
const cases = fixtureCases('ernie-tiny').filter((c) => c.name !== 'bf16');
const models = new Map<string, Ernie45VL>();

async function model(checkpoint: string): Promise<Ernie45VL> {
  let m = models.get(checkpoint);
  if (!m) {
    m = await Ernie45VL.fromPretrained(checkpoint, { device: 'cpu', reference: 'hf' });
    models.set(checkpoint, m);
  }
  return m;
}

afterAll(async () => {
  for (const m of models.values()) await m.release();
});

describe.each(cases)('Ernie45VL against HF 5.17: $name', (c) => {
  let inputs: Awaited<ReturnType<typeof readTensors>>;
  let expected: Awaited<ReturnType<typeof readTensors>>;
  beforeAll(async () => {
    inputs = await readTensors(`${c.dir}/inputs.safetensors`);
    expected = await readTensors(`${c.dir}/expected.safetensors`);
  });

  it('forward: logits within 1e-4 of max |logits| (padding excluded), vision embeddings, position ids', async () => {
    const m = await model(c.checkpoint);
    const out = await m.forward(inputs as never);
    const ref = expected.logits!;
    expect(out.logits.dims).toEqual(ref.dims);
    const V = ref.dims[2]!;
    const mask = inputs.attention_mask?.data as BigInt64Array | undefined;
    const err = relError(out.logits.data as Float32Array, ref.data as Float32Array, (i) => !mask || mask[Math.floor(i / V)] === 1n);
    expect(err).toBeLessThan(1e-4);
    for (const [key, got] of [
      ['image_embeds', out.imageEmbeds],
      ['video_embeds', out.videoEmbeds],
    ] as const) {
      if (!expected[key]) continue;
      expect(got!.dims).toEqual(expected[key]!.dims);
      expect(relError(got!.data as Float32Array, expected[key]!.data as Float32Array)).toBeLessThan(1e-4);
    }
    const masked = (i: number) => !mask || mask[i % mask.length] === 1n;
    const pos = Array.from(out.positionIds.data as BigInt64Array, Number).filter((_, i) => masked(i));
    const refPos = Array.from(expected.position_ids!.data as BigInt64Array, Number).filter((_, i) => masked(i));
    expect(pos).toEqual(refPos);
  });

  it('generate: greedy ids identical to HF generate()', async () => {
    const m = await model(c.checkpoint);
    const ref = expected.generated_ids!;
    const n = ref.dims[1]!;
    const streamed: number[][] = [];
    const out = await m.generate(inputs as never, { maxNewTokens: n, eos: [], onToken: (t) => streamed.push([...t]) });
    expect(out.tokens.flat()).toEqual(Array.from(ref.data as BigInt64Array, Number));
    expect(streamed).toHaveLength(n);
  });
});

describe('Ernie45VL input checks', () => {
  it('pixel rows that do not match the grids are refused before anything is allocated for them', async () => {
    const c = cases.find((x) => x.name === 'images')!;
    const m = await model(c.checkpoint);
    const inputs = await readTensors(`${c.dir}/inputs.safetensors`);
    const pv = inputs.pixel_values!;
    const bad = { ...inputs, pixel_values: { ...pv, dims: [47, 588], data: (pv.data as Float32Array).subarray(0, 47 * 588) } };
    await expect(m.forward(bad as never)).rejects.toThrow(
      /pixel_values has 47 patch rows of 588 but image_grid_thw \(\[1, 4, 6\], \[1, 6, 4\]\) needs 48/,
    );
  });

  it('a placeholder count that does not match the grids is a clear error, as in HF', async () => {
    const c = cases.find((x) => x.name === 'images')!;
    const m = await model(c.checkpoint);
    const inputs = await readTensors(`${c.dir}/inputs.safetensors`);
    const ids = (inputs.input_ids!.data as BigInt64Array).slice();
    const at = ids.indexOf(BigInt(m.config.tokens.image));
    ids[at] = 5n;
    const bad = { ...inputs, input_ids: { ...inputs.input_ids!, data: ids } };
    const err = await m.forward(bad as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).code).toBe('PLACEHOLDER_MISMATCH');
    expect((err as ModelError).message).toMatch(
      /11 image placeholder tokens \(id 250\) but image_grid_thw \(\[1, 4, 6\], \[1, 6, 4\]\) gives 12 features/,
    );
  });
});

describe('Ernie45VL with a bf16 checkpoint, against HF computing in bf16', () => {
  // vlmkit computes in float32 whatever the checkpoint dtype (the case `bf16-fp32-compute` holds HF's float32
  // results on the same bf16 weights, matched to 1e-4 above). HF's bf16 arithmetic carries ~3 significant
  // digits and its errors grow through the layers (measured here: 0.184 of max |logits| at the worst position),
  // so against it only a loose bound holds; the greedy tokens must still agree.
  const c = fixtureCases('ernie-tiny').find((x) => x.name === 'bf16');
  it.runIf(c !== undefined)('logits within 0.25 of max |logits|, greedy ids identical', async () => {
    const m = await model(c!.checkpoint);
    const inputs = await readTensors(`${c!.dir}/inputs.safetensors`);
    const expected = await readTensors(`${c!.dir}/expected.safetensors`);
    const out = await m.forward(inputs as never);
    const err = relError(out.logits.data as Float32Array, expected.logits!.data as Float32Array);
    expect(err).toBeLessThan(0.25);
    const gen = await m.generate(inputs as never, { maxNewTokens: expected.generated_ids!.dims[1]!, eos: [] });
    expect(gen.tokens.flat()).toEqual(Array.from(expected.generated_ids!.data as BigInt64Array, Number));
  });
});
