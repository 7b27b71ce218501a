// computeDtype float16 / bfloat16 on both tiny fixtures, every case: logits against the float32 run and HF's,
// greedy ids against HF's. float16 runs on ORT's CPU EP as built; bfloat16 runs through emulateInFloat32 (ORT's
// CPU EP has no bfloat16 compute kernels: a plain session fails with NO_KERNEL, checked below). The bf16 case's
// expected logits are HF computing in bfloat16: the bfloat16 graph must be much closer to them than float32 is.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ComputeDType } from '@vlmkit/onnx-graph';
import { type HostTensor, RuntimeError } from '@vlmkit/runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { ModelError } from './errors.js';
import { exportModel } from './export.node.js';
import { OPS_FIELDS } from './profiles.js';
import { loadPretrained, type PretrainedModel } from './registry.js';
import { FIXTURES, fixtureCases, meanRel, readTensors, relError } from './test-utils/fixtures.js';
import { loadFailure } from './test-utils/load-failure.js';

const work = mkdtempSync(join(tmpdir(), 'vlmkit-dtype-test-'));
const cacheDir = join(work, 'cache');
afterAll(() => rmSync(work, { recursive: true, force: true }));

const loaded = new Map<string, Promise<PretrainedModel>>();
afterAll(async () => {
  for (const m of loaded.values()) await (await m).release();
});
/** One model per checkpoint and dtype, loaded once (bfloat16 emulated on float32 kernels). */
function model(checkpoint: string, dtype: ComputeDType): Promise<PretrainedModel> {
  const key = `${checkpoint}|${dtype}`;
  let m = loaded.get(key);
  if (m === undefined) {
    m = loadPretrained(checkpoint, {
      device: 'cpu',
      cacheDir,
      reference: 'hf',
      dtype,
      profile: { emulateBfloat16: dtype === 'bfloat16' },
    });
    loaded.set(key, m);
  }
  return m;
}

interface Run {
  logits: Float32Array;
  ids: number[];
}
async function run(checkpoint: string, dtype: ComputeDType, inputs: Record<string, HostTensor>, steps: number): Promise<Run> {
  const m = await model(checkpoint, dtype);
  const logits = (await m.forwardNamed(inputs)).logits!.data as Float32Array;
  const gen = await m.generate(inputs, { maxNewTokens: steps, eos: [] });
  return { logits, ids: gen.tokens.flat() };
}

/**
 * Bounds per model and dtype, about 2x the largest measured over the model's cases (ORT 1.29 CPU, AMD EPYC;
 * table in the models README, 'Compute dtype'): `mean` = mean |diff| / mean |HF| over real positions, `max` =
 * max |diff| / max |float32 run|. ERNIE's max is set by single positions where the router's top-k flips (random
 * tiny weights: near-ties), so it is loose; the mean is the systematic error.
 */
const BOUND: Record<string, Record<'float16' | 'bfloat16', { mean: number; max: number }>> = {
  'ernie-tiny': { float16: { mean: 0.1, max: 0.9 }, bfloat16: { mean: 0.15, max: 0.45 } },
  'granite-tiny': { float16: { mean: 0.008, max: 0.02 }, bfloat16: { mean: 0.08, max: 0.17 } },
  'qwen3-vl-tiny': { float16: { mean: 0.015, max: 0.025 }, bfloat16: { mean: 0.045, max: 0.07 } },
  'qwen3-vl-moe-tiny': { float16: { mean: 0.05, max: 0.8 }, bfloat16: { mean: 0.065, max: 0.9 } },
};

describe.each(Object.keys(BOUND))('%s', (name) => {
  const cases = fixtureCases(name).filter((c) => c.name !== 'lora');
  it.each(cases.map((c) => [c.name, c] as const))('%s: float16 and bfloat16 against float32 and HF', async (_, c) => {
    const inputs = await readTensors(join(c.dir, 'inputs.safetensors'));
    const expected = await readTensors(join(c.dir, 'expected.safetensors'));
    const mask = inputs.attention_mask?.data as BigInt64Array | undefined;
    const V = expected.logits!.dims[2]!;
    const real = (i: number) => mask === undefined || mask[Math.floor(i / V)] !== 0n;
    const hf = expected.logits!.data as Float32Array;
    const hfIds = Array.from(expected.generated_ids!.data as BigInt64Array, Number);
    const steps = expected.generated_ids!.dims[1]!;
    const f32 = await run(c.checkpoint, 'float32', inputs, steps);
    const row: Record<string, number | string> = {
      case: `${name}/${c.name}`,
      f32VsHf: relError(f32.logits, hf, real),
      f32VsHfMean: meanRel(f32.logits, hf, real),
    };
    for (const dtype of ['float16', 'bfloat16'] as const) {
      const r = await run(c.checkpoint, dtype, inputs, steps);
      row[`${dtype}VsF32`] = relError(r.logits, f32.logits, real);
      row[`${dtype}VsHf`] = relError(r.logits, hf, real);
      row[`${dtype}VsHfMean`] = meanRel(r.logits, hf, real);
      row[`${dtype}Ids`] = r.ids.filter((t, i) => t === hfIds[i]).length / hfIds.length;
    }
    // One line per case for the README table (vitest --silent=false shows it).
    console.log(JSON.stringify(row));
    const bound = BOUND[name]!;
    for (const dtype of ['float16', 'bfloat16'] as const) {
      expect(row[`${dtype}VsHfMean`], `${dtype} mean vs HF`).toBeLessThan(bound[dtype].mean);
      expect(row[`${dtype}VsF32`], `${dtype} max vs float32`).toBeLessThan(bound[dtype].max);
    }
    if (c.name === 'bf16') {
      // HF computing in bfloat16: the bfloat16 graph is closer to it than float32 compute is (measured 0.068 vs
      // 0.184 max, 0.037 vs 0.054 mean), and its greedy ids are HF's.
      expect(row.bfloat16VsHf as number).toBeLessThan((row.f32VsHf as number) / 2);
      expect(row.bfloat16VsHfMean as number).toBeLessThan(row.f32VsHfMean as number);
      expect(row.bfloat16Ids).toBe(1);
      // The first position attends to itself only: there the graph rounds where HF rounds (embedding, RMSNorm,
      // projections, float32 rotary and router, experts summed in bfloat16, lm_head), and its logits are HF's.
      const bf = await run(c.checkpoint, 'bfloat16', inputs, 1);
      for (let v = 0; v < V; v++) expect(bf.logits[v], `position 0 logit ${v}`).toBe(hf[v]);
    } else {
      // float16 keeps HF's (float32) greedy ids on every case.
      expect(row.float16Ids, 'float16 greedy ids').toBe(1);
    }
  });
});

it('a bfloat16 session on the CPU EP fails with NO_KERNEL naming the op and the dtype', async () => {
  const err = await loadFailure(join(FIXTURES, 'granite-tiny'), { device: 'cpu', cacheDir, dtype: 'bfloat16' });
  expect(err).toBeInstanceOf(RuntimeError);
  const e = err as RuntimeError;
  expect(e.code).toBe('NO_KERNEL');
  expect(e.dtype).toBe('bfloat16');
  expect(e.op).toMatch(/^[A-Za-z]+\(\d+\)$/);
  expect(e.message).toContain(`no kernel for ${e.op} in bfloat16`);
});

it('computeDtype other than float32 with quantize is refused (with the in-graph loop it builds: compute-dtype-loop test)', async () => {
  const dir = join(FIXTURES, 'ernie-tiny');
  for (const dtype of ['float16', 'bfloat16'] as const) {
    const err = await loadPretrained(dir, { device: 'cpu', cacheDir, dtype, quantize: 'int8' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).code).toBe('INCOMPATIBLE_OPTIONS');
    expect((err as ModelError).message).toMatch(/cannot be combined with quantize/);
  }
});

it('each dtype has its own graph-cache entry (the key differs, the entry records the dtype)', async () => {
  const granite = join(FIXTURES, 'granite-tiny');
  for (const dtype of ['float32', 'float16'] as const)
    await (await model(granite, dtype)).forwardNamed(await readTensors(join(granite, 'cases', 'batch-2', 'inputs.safetensors')));
  const entries = readdirSync(cacheDir)
    .filter((f) => /^vlmkit-granite-decoder-[0-9a-f]+\.json$/.test(f))
    .map((f) => (JSON.parse(readFileSync(join(cacheDir, f), 'utf8')) as { computeDtype?: string }).computeDtype);
  expect(entries).toContain('float32');
  expect(entries).toContain('float16');
});

it('an export records compute_dtype and the KV cache dtype, and its graphs take float32 inputs and a float16 cache', async () => {
  const out = join(work, 'export-f16');
  const r = await exportModel(join(FIXTURES, 'ernie-tiny'), out, { computeDtype: 'float16' });
  expect(r.manifest.compute_dtype).toBe('float16');
  expect(r.manifest.decoder.kv_cache.dtype).toBe('float16');
  const dtypes = Object.fromEntries(
    [...r.manifest.graphs.decoder.inputs, ...r.manifest.graphs.decoder.outputs].map((t) => [t.name, t.dtype]),
  );
  expect([dtypes.vision_embeds, dtypes.rope_cos, dtypes.logits]).toEqual(['float32', 'float32', 'float32']);
  expect([dtypes['past_key_values.0.key'], dtypes['present.0.value']]).toEqual(['float16', 'float16']);
  const plain = await exportModel(join(FIXTURES, 'ernie-tiny'), join(work, 'export-f32'));
  expect([plain.manifest.compute_dtype, plain.manifest.decoder.kv_cache.dtype]).toEqual(['float32', 'float32']);
});

// The fused-ops decoder (the cuda profile's passes, `OPS_FIELDS.contrib`: GroupQueryAttention in 16 bits) builds and runs in
// float16 too (CPU's GQA takes batch 1 with a past: single-row cases), within the float16 bounds and with HF's ids.
it.each([
  ['ernie-tiny', 'text-only'],
  ['granite-tiny', 'anyres'],
])("%s %s: ops 'contrib' in float16", async (name, caseName) => {
  const dir = join(FIXTURES, name);
  const inputs = await readTensors(join(dir, 'cases', caseName, 'inputs.safetensors'));
  const expected = await readTensors(join(dir, 'cases', caseName, 'expected.safetensors'));
  const m = await loadPretrained(dir, { device: 'cpu', cacheDir, reference: 'hf', profile: OPS_FIELDS.contrib, dtype: 'float16' });
  try {
    const logits = (await m.forwardNamed(inputs)).logits!.data as Float32Array;
    const hf = expected.logits!.data as Float32Array;
    expect(meanRel(logits, hf, () => true)).toBeLessThan(BOUND[name]!.float16.mean);
    const gen = await m.generate(inputs, { maxNewTokens: expected.generated_ids!.dims[1]!, eos: [] });
    expect(gen.tokens.flat()).toEqual(Array.from(expected.generated_ids!.data as BigInt64Array, Number));
  } finally {
    await m.release();
  }
});
