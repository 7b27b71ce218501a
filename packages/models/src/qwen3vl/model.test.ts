import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelError } from '../errors.js';
import { FIXTURES, fixtureCases, readTensors, relError } from '../test-utils/fixtures.js';
import { Qwen3VL } from './model.js';

// Every case of both HF 5.17 fixtures (tools/fixtures: qwen3-vl-tiny dense, qwen3-vl-moe-tiny MoE).
const cases = [...fixtureCases('qwen3-vl-tiny'), ...fixtureCases('qwen3-vl-moe-tiny')];
const models = new Map<string, Promise<Qwen3VL>>();

/** The checkpoint's model, with the host decode loop (default) or the in-graph one (buildQwen3VlDecodeLoopModel). */
function model(checkpoint: string, loop: 'host' | 'graph' = 'host'): Promise<Qwen3VL> {
  let m = models.get(`${checkpoint}|${loop}`);
  if (!m) {
    m = Qwen3VL.fromPretrained(checkpoint, { device: 'cpu', ...(loop === 'graph' ? { profile: { loop } } : {}) });
    models.set(`${checkpoint}|${loop}`, m);
  }
  return m;
}

afterAll(async () => {
  for (const m of models.values()) await (await m).release();
});

describe.each(cases.map((c) => [`${c.json.checkpoint} ${c.name}`, c] as const))('Qwen3VL against HF 5.17: %s', (label, c) => {
  let inputs: Awaited<ReturnType<typeof readTensors>>;
  let expected: Awaited<ReturnType<typeof readTensors>>;
  beforeAll(async () => {
    inputs = await readTensors(`${c.dir}/inputs.safetensors`);
    expected = await readTensors(`${c.dir}/expected.safetensors`);
  });

  it('forward: logits within 1e-4 of max |logits| (padding excluded), vision embeddings and deepstack within 1e-5, positions exact', async () => {
    const m = await model(c.checkpoint);
    const out = await m.forwardNamed(inputs as never);
    const ref = expected.logits!;
    expect(out.logits!.dims).toEqual(ref.dims);
    const V = ref.dims[2]!;
    const mask = inputs.attention_mask?.data as BigInt64Array | undefined;
    const real = (i: number) => !mask || mask[Math.floor(i / V)] === 1n;
    const errs: Record<string, number> = { logits: relError(out.logits!.data as Float32Array, ref.data as Float32Array, real) };
    expect(errs.logits).toBeLessThan(1e-4);
    const vision = ['image_embeds', 'video_embeds', 'deepstack_0', 'deepstack_1'].filter((k) => expected[k] !== undefined);
    expect(vision.length).toBeGreaterThan(0);
    for (const key of vision) {
      expect(out[key]?.dims, key).toEqual(expected[key]!.dims);
      errs[key] = relError(out[key]!.data as Float32Array, expected[key]!.data as Float32Array);
      expect(errs[key], key).toBeLessThan(1e-5);
    }
    const masked = (i: number) => !mask || mask[i % mask.length] === 1n;
    const pos = Array.from(out.position_ids!.data as BigInt64Array, Number).filter((_, i) => masked(i));
    const refPos = Array.from(expected.position_ids!.data as BigInt64Array, Number).filter((_, i) => masked(i));
    expect(pos).toEqual(refPos);
    console.log(
      `[${label}] ${Object.entries(errs)
        .map(([k, v]) => `${k} ${v.toExponential(2)}`)
        .join(', ')}`,
    );
  });

  it.each(['host', 'graph'] as const)('generate, %s loop: greedy ids identical to HF generate()', async (loop) => {
    const m = await model(c.checkpoint, loop);
    const ref = expected.generated_ids!;
    const n = ref.dims[1]!;
    const out = await m.generate(inputs as never, { maxNewTokens: n, eos: [] });
    expect(out.tokens.flat()).toEqual(Array.from(ref.data as BigInt64Array, Number));
  });

  it("seeded sampling: the in-graph loop gives the host loop's ids", async () => {
    const sampling = { maxNewTokens: 6, eos: [], temperature: 0.9, topK: 5, topP: 0.8, seed: 11 };
    const [host, graph] = [await model(c.checkpoint), await model(c.checkpoint, 'graph')];
    expect((await graph.generate(inputs as never, sampling)).tokens).toEqual((await host.generate(inputs as never, sampling)).tokens);
  });
});

describe('Qwen3VL input checks', () => {
  it('a placeholder count that does not match the grids is a clear error, as in HF', async () => {
    const c = cases.find((x) => x.name === 'image')!;
    const m = await model(c.checkpoint);
    const inputs = await readTensors(`${c.dir}/inputs.safetensors`);
    const ids = (inputs.input_ids!.data as BigInt64Array).slice();
    ids[ids.indexOf(BigInt(m.config.tokens.image))] = 5n;
    const err = await m.forward({ ...inputs, input_ids: { ...inputs.input_ids!, data: ids } } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).code).toBe('PLACEHOLDER_MISMATCH');
  });
});

// An image and a video in one prompt (tools/fixtures/qwen3vl_image_and_video.py on the processor case
// image-and-video): the rows are scattered per modality, the deepstack features joined in prompt order.
// The video-first variant has the image block after the video's, so prompt order is not concatenation order.
describe.each(
  ['qwen3-vl-tiny', 'qwen3-vl-moe-tiny'].flatMap((m) => [
    [m, ''],
    [m, '-video-first'],
  ]),
)('Qwen3VL against HF 5.17, an image and a video: %s%s', (name, variant) => {
  it('logits, embeddings, joined deepstack features, positions and greedy ids', async () => {
    const all = await readTensors(join(FIXTURES, 'qwen3vl-image-and-video', `${name}${variant}.safetensors`));
    const part = (prefix: string) =>
      Object.fromEntries(Object.entries(all).flatMap(([k, v]) => (k.startsWith(prefix) ? [[k.slice(prefix.length), v]] : [])));
    const [inputs, expected] = [part('inputs.'), part('expected.')];
    const m = await model(join(FIXTURES, name));
    const out = await m.forwardNamed(inputs as never);
    for (const key of ['logits', 'image_embeds', 'video_embeds', 'deepstack_0', 'deepstack_1']) {
      expect(out[key]!.dims, key).toEqual(expected[key]!.dims);
      expect(relError(out[key]!.data as Float32Array, expected[key]!.data as Float32Array), key).toBeLessThan(1e-5);
    }
    expect(Array.from(out.position_ids!.data as BigInt64Array)).toEqual(Array.from(expected.position_ids!.data as BigInt64Array));
    const gen = await m.generate(inputs as never, { maxNewTokens: 8, eos: [] });
    expect(gen.tokens.flat()).toEqual(Array.from(expected.generated_ids!.data as BigInt64Array, Number));
  });
});
