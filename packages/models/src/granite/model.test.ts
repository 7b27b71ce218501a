import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelError } from '../errors.js';
import { FIXTURE_DIR } from '../fixture-dir.node.js';
import { fixtureCases, readTensors, relError } from '../test-utils/fixtures.js';
import { Granite4Vision } from './model.js';

const cases = fixtureCases('granite-tiny');
const models = new Map<string, Granite4Vision>();

async function model(checkpoint: string, adapter?: string): Promise<Granite4Vision> {
  const key = `${checkpoint}|${adapter ?? ''}`;
  let m = models.get(key);
  if (!m) {
    m = await Granite4Vision.fromPretrained(checkpoint, { device: 'cpu', adapter });
    models.set(key, m);
  }
  return m;
}

afterAll(async () => {
  for (const m of models.values()) await m.release();
});

describe.each(cases)('Granite4Vision against HF 5.17: $name', (c) => {
  const adapter = typeof c.json.adapter === 'string' ? join(FIXTURE_DIR, c.json.adapter) : undefined;
  let inputs: Awaited<ReturnType<typeof readTensors>>;
  let expected: Awaited<ReturnType<typeof readTensors>>;
  beforeAll(async () => {
    inputs = await readTensors(`${c.dir}/inputs.safetensors`);
    expected = await readTensors(`${c.dir}/expected.safetensors`);
  });

  it('forward: logits within 1e-4 of max |logits| (padding excluded), every injected level within 1e-4', async () => {
    const m = await model(c.checkpoint, adapter);
    const out = await m.forward(inputs as never);
    const ref = expected.logits!;
    expect(out.logits.dims).toEqual(ref.dims);
    const V = ref.dims[2]!;
    const mask = inputs.attention_mask?.data as BigInt64Array | undefined;
    expect(
      relError(out.logits.data as Float32Array, ref.data as Float32Array, (i) => !mask || mask[Math.floor(i / V)] === 1n),
    ).toBeLessThan(1e-4);
    out.deepstack.forEach((level, k) => {
      const want = expected[`image_features_level_${k}`]!;
      expect(level.dims).toEqual(want.dims);
      expect(relError(level.data as Float32Array, want.data as Float32Array), `level ${k}`).toBeLessThan(1e-4);
    });
  });

  it('generate: greedy ids identical to HF generate()', async () => {
    const m = await model(c.checkpoint, adapter);
    const ref = expected.generated_ids!;
    const out = await m.generate(inputs as never, { maxNewTokens: ref.dims[1]!, eos: [] });
    expect(out.tokens.flat()).toEqual(Array.from(ref.data as BigInt64Array, Number));
  });
});

describe('Granite4Vision LoRA and input checks', () => {
  it('the merged adapter changes the logits: the base model does not match the lora case', async () => {
    const c = cases.find((x) => x.name === 'lora');
    if (!c) return;
    const inputs = await readTensors(`${c.dir}/inputs.safetensors`);
    const expected = await readTensors(`${c.dir}/expected.safetensors`);
    const base = await model(c.checkpoint);
    const out = await base.forward(inputs as never);
    expect(relError(out.logits.data as Float32Array, expected.logits!.data as Float32Array)).toBeGreaterThan(1e-2);
  });

  it('no state carries from one request to the next: interleaved requests give the answers they give alone', async () => {
    const [a, b] = ['anyres', 'multi-image'].map((n) => cases.find((x) => x.name === n)!);
    const m = await model(a!.checkpoint);
    const ia = await readTensors(`${a!.dir}/inputs.safetensors`);
    const ib = await readTensors(`${b!.dir}/inputs.safetensors`);
    const first = await m.generate(ia as never, { maxNewTokens: 4, eos: [] });
    await m.generate(ib as never, { maxNewTokens: 4, eos: [] });
    const again = await m.generate(ia as never, { maxNewTokens: 4, eos: [] });
    expect(again.tokens).toEqual(first.tokens);
    const [fa, fb] = [await m.forward(ia as never), await m.forward(ib as never)];
    const fa2 = await m.forward(ia as never);
    expect(Array.from(fa2.logits.data as Float32Array)).toEqual(Array.from(fa.logits.data as Float32Array));
    expect(fb.logits.dims[1]).not.toBe(fa.logits.dims[1]);
  });

  it("inputs are checked as ERNIE's are: wrong dtype or shape, sizes without pixels are BAD_INPUT naming the input", async () => {
    const c = cases.find((x) => x.name === 'anyres')!;
    const m = await model(c.checkpoint);
    const inputs = await readTensors(`${c.dir}/inputs.safetensors`);
    const mask = inputs.attention_mask!;
    const refused = async (bad: Record<string, unknown>) => {
      const err = await m.forward({ ...inputs, ...bad } as never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelError);
      expect((err as ModelError).code).toBe('BAD_INPUT');
      return (err as ModelError).message;
    };
    const int32Mask = { dtype: 'int32', dims: mask.dims, data: Int32Array.from(mask.data as BigInt64Array, Number) };
    expect(await refused({ attention_mask: int32Mask })).toBe(
      `attention_mask must be int64 [1, ${mask.dims[1]}] (the shape of input_ids), got int32 [1, ${mask.dims[1]}]`,
    );
    expect(await refused({ position_ids: { ...mask, dims: [1, 3], data: (mask.data as BigInt64Array).slice(0, 3) } })).toBe(
      `position_ids must be int64 [1, ${mask.dims[1]}] (the shape of input_ids), got int64 [1, 3]`,
    );
    expect(await refused({ pixel_values: undefined })).toBe('image_sizes is given but pixel_values is missing');
  });

  it('a placeholder count that does not match the packed features is a clear error', async () => {
    const c = cases.find((x) => x.name === 'anyres')!;
    const m = await model(c.checkpoint);
    const inputs = await readTensors(`${c.dir}/inputs.safetensors`);
    const ids = (inputs.input_ids!.data as BigInt64Array).slice();
    ids[ids.indexOf(BigInt(m.config.imageTokenId))] = 5n;
    const err = await m.forward({ ...inputs, input_ids: { ...inputs.input_ids!, data: ids } } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).message).toMatch(/93 image tokens \(id 255\) but image_sizes \(70x160\) pack into 94 features/);
  });
});
