import { join } from 'node:path';
import { applyPasses, type Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import type ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, type FixtureCase, loadCase, numbers, readAll, readJson, requireFixtures } from '../test-utils/fixtures.js';
import { mapErnieDecoder } from '../test-utils/map-decoder.js';
import { OPS_VARIANTS } from '../test-utils/ops-variants.js';
import { maxAbs, maxAbsDiff, sessionFor } from '../test-utils/ort.js';
import { argmax, type StepInput, step } from '../test-utils/runner.js';
import { type ErnieTextConfig, ernieTextConfigFromHf } from './config.js';
import { ernieTextExpectedParameters } from './parameters.js';
import { ernieDecodePositions } from './rotary.js';
import { buildErnieTextDecoderModel } from './standalone.js';

/**
 * The decoder against HF transformers 5.17 on test-fixtures/ernie-tiny (a
 * random 4-layer ERNIE-4.5-VL: layer 0 dense, 1-3 MoE with 4 text + 4
 * vision experts, k = 2, one shared expert). Vision rows are the
 * reference's own `image_embeds` / `video_embeds` at the placeholder
 * tokens, positions its `position_ids`, MoE token types its
 * `moe_mm_token_type_ids`. Tolerance: max |diff| / max |expected| over
 * real (unpadded) positions < 1e-4.
 */
const MODEL = 'ernie-tiny';
const CASES = ['text-only', 'images', 'video', 'video-long-t', 'batch-padded'];
const REL_TOL = 1e-4;
requireFixtures([MODEL, 'config.json'], ...CASES.map((c) => [MODEL, 'cases', c, 'expected.safetensors']));

/** The step inputs of a case's prompt (optionally its first `len` tokens), from the reference's inputs and expected tensors. */
function promptStep(c: FixtureCase, top: Record<string, unknown>, len?: number): StepInput & { realRows: boolean[] } {
  const [B, Sfull] = c.inputs.input_ids!.shape as [number, number];
  const S = len ?? Sfull;
  const cut = (a: number[]) => Array.from({ length: B * S }, (_, n) => a[Math.floor(n / S) * Sfull + (n % S)]!);
  const ids = cut(numbers(c.inputs.input_ids!));
  const mask = cut(numbers(c.inputs.attention_mask!));
  const moeType = cut(numbers(c.inputs.moe_mm_token_type_ids!));
  const pos = numbers(c.expected.position_ids!);
  const positionIds = new BigInt64Array(3 * B * S);
  for (let r = 0; r < 3 * B; r++) for (let s = 0; s < S; s++) positionIds[r * S + s] = BigInt(pos[r * Sfull + s]!);
  // Image rows go to image placeholders in order, video rows to video placeholders (HF masked_scatter per modality).
  const positions: number[] = [];
  const embeds: Float32Array[] = [];
  for (const [m, tokenKey] of [
    ['image', 'image_token_id'],
    ['video', 'video_token_id'],
  ] as const) {
    const rows = c.expected[`${m}_embeds`];
    if (rows === undefined) continue;
    const D = rows.shape[1]!;
    const at = ids.flatMap((id, n) => (id === top[tokenKey] ? [n] : []));
    positions.push(...at);
    embeds.push((rows.data as Float32Array).subarray(0, at.length * D));
  }
  const all = new Float32Array(embeds.reduce((a, e) => a + e.length, 0));
  embeds.reduce((o, e) => {
    all.set(e, o);
    return o + e.length;
  }, 0);
  return { B, S, ids, moeType, mask, positionIds, vision: { positions, embeds: all }, realRows: mask.map((m) => m === 1) };
}

function relErr(got: Float32Array, want: Float32Array, rows: boolean[], width: number): number {
  const keep = (i: number) => rows[Math.floor(i / width)]!;
  return maxAbsDiff(got, want, keep) / maxAbs(want, keep);
}

describe.each(OPS_VARIANTS)('ERNIE text decoder vs HF transformers 5.17 (test-fixtures/ernie-tiny), $label', ({ options: ops, passes }) => {
  let cfg: ErnieTextConfig;
  let top: Record<string, unknown>;
  let ckpt: Checkpoint;
  let session: ort.InferenceSession;
  let decoderWeights: Weights;
  const cases = new Map<string, FixtureCase>();

  beforeAll(async () => {
    top = await readJson(MODEL, 'config.json');
    cfg = ernieTextConfigFromHf(top);
    ckpt = await Checkpoint.open(join(FIXTURES, MODEL));
    const t0 = performance.now();
    const { decoder, report } = await mapErnieDecoder(ckpt, cfg);
    expect(report.missing).toEqual([]);
    decoderWeights = decoder;
    const g = buildErnieTextDecoderModel(decoder, cfg, { outputHiddenStates: true, outputRouting: true, ...ops });
    applyPasses(g, passes);
    session = await sessionFor(g);
    console.log(`[ernie-tiny] build + session create: ${(performance.now() - t0).toFixed(0)} ms`);
    for (const name of CASES) cases.set(name, await loadCase(MODEL, name));
  });
  afterAll(async () => {
    await session?.release();
    await ckpt?.close();
  });

  it('the weight mapper supplies exactly the expected parameters, and the tied table is stored once', () => {
    const expected = ernieTextExpectedParameters(cfg);
    expect(decoderWeights.names()).toEqual(expected.map((p) => p.name).sort());
    for (const p of expected) expect([p.name, decoderWeights.get(p.name).shape]).toEqual([p.name, p.shape]);
    const { initializers } = buildErnieTextDecoderModel(decoderWeights, cfg).snapshot();
    // The mapper hands lm_head an equal but distinct ref to the same bytes: only one initializer may point there.
    const emb = decoderWeights.get('embed_tokens.weight');
    const same = (r: typeof emb) => r.kind === 'file' && emb.kind === 'file' && r.path === emb.path && r.byteOffset === emb.byteOffset;
    expect(initializers.filter((e) => same(e.ref)).map((e) => e.name)).toEqual(['decoder.embed_tokens.weight']);
  });

  for (const name of CASES) {
    it(`${name}: logits and every layer's hidden state match the prompt forward`, async () => {
      const c = cases.get(name)!;
      const x = promptStep(c, top);
      const out = await step(session, cfg, x);
      const errs = [relErr(out.logits, c.expected.logits!.data as Float32Array, x.realRows, cfg.vocabSize)];
      out.hidden.forEach((h, l) => {
        errs.push(relErr(h, c.expected[`hidden_layer_${l}`]!.data as Float32Array, x.realRows, cfg.hiddenSize));
      });
      console.log(
        `[ernie-tiny/${name}] rel err logits ${errs[0]!.toExponential(2)}, layers ${errs
          .slice(1)
          .map((e) => e.toExponential(2))
          .join(' ')}; forward ${out.ms.toFixed(1)} ms`,
      );
      for (const e of errs) expect(e).toBeLessThan(REL_TOL);
    });
  }

  for (const name of CASES) {
    it(`${name}: the first MoE layer routes every token to HF's experts with HF's weights`, async () => {
      const c = cases.get(name)!;
      const layer = c.meta.first_moe_layer as number;
      const x = promptStep(c, top);
      const out = await step(session, cfg, x);
      // Real tokens only: a padded query row's hidden state is meaningless (HF's and ours differ), so is its routing.
      const k = cfg.moe.topK;
      const real = (a: ArrayLike<number>) => Array.from(a).filter((_, i) => x.realRows[Math.floor(i / k)]);
      const ids = real(numbers(out.raw[`router.${layer}.topk_ids`]!));
      const weights = real(out.raw[`router.${layer}.topk_weights`]!.data as Float32Array);
      expect(ids).toEqual(real(numbers(c.expected[`router_layer${layer}_topk_ids`]!)));
      expect(maxAbsDiff(weights, real(c.expected[`router_layer${layer}_topk_weights`]!.data as Float32Array))).toBeLessThan(1e-5);
      // Both modalities must be exercised where the case has vision tokens.
      const isVision = numbers(c.expected[`router_layer${layer}_is_vision`]!);
      if (name !== 'text-only') expect(new Set(isVision).size).toBe(2);
    });
  }

  it('KV cache: prefill S-1 tokens then one decode step equals the full forward at the last position', async () => {
    const c = cases.get('images')!;
    const full = promptStep(c, top);
    const prefill = promptStep(c, top, full.S - 1);
    const first = await step(session, cfg, prefill);
    const last = full.S - 1;
    const dec = await step(session, cfg, {
      B: 1,
      S: 1,
      ids: [full.ids[last]!],
      moeType: [full.moeType[last]!],
      mask: full.mask,
      positionIds: BigInt64Array.from([0, 1, 2], (a) => full.positionIds[a * full.S + last]!),
      past: first.present,
    });
    expect(dec.present[0]!.key.dims).toEqual([1, cfg.numKeyValueHeads, full.S, cfg.headDim]);
    const V = cfg.vocabSize;
    const want = (c.expected.logits!.data as Float32Array).subarray(last * V, (last + 1) * V);
    const err = maxAbsDiff(dec.logits, want) / maxAbs(want);
    console.log(
      `[ernie-tiny/images] prefill ${full.S - 1} + decode 1: rel err ${err.toExponential(2)}; decode step ${dec.ms.toFixed(1)} ms`,
    );
    expect(err).toBeLessThan(REL_TOL);
  });

  for (const name of CASES) {
    it(`${name}: a greedy decode loop with the KV cache reproduces generated_ids and their logits`, async () => {
      const c = cases.get(name)!;
      const g = await greedy(session, cfg, promptStep(c, top), c.expected.generated_ids!.shape[1]!, numbers(c.expected.rope_deltas!));
      const worst = worstStepError(g.stepLogits, c.expected.generated_logits!.data as Float32Array, cfg.vocabSize);
      console.log(
        `[ernie-tiny/${name}] greedy ${g.ids[0]!.length} steps: ids ${JSON.stringify(g.ids)}; worst step-logit rel err ${worst.toExponential(2)}; decode step median ${g.medianMs.toFixed(1)} ms`,
      );
      expect(g.ids.flat()).toEqual(numbers(c.expected.generated_ids!));
      expect(worst).toBeLessThan(REL_TOL);
    });
  }
});

/**
 * Greedy generation with the KV cache: prefill, then one token per row per
 * step; the new token's position is (real tokens so far in its row) + the
 * prompt's rope delta on all three axes, its moe token type 0 (text).
 * Returns the ids and, per row, the logits each step took the argmax of.
 */
async function greedy(session: ort.InferenceSession, cfg: ErnieTextConfig, x: StepInput, steps: number, deltas: number[]) {
  const { B, S } = x;
  const V = cfg.vocabSize;
  let out = await step(session, cfg, x);
  let mask = x.mask;
  let rowLogits = Array.from({ length: B }, (_, b) => out.logits.slice((b * S + S - 1) * V, (b * S + S) * V));
  const ids: number[][] = Array.from({ length: B }, () => []);
  const stepLogits: Float32Array[][] = Array.from({ length: B }, () => []);
  const times: number[] = [];
  for (let t = 0; t < steps; t++) {
    const next = rowLogits.map((l) => argmax(l, 0, V));
    next.forEach((id, b) => {
      ids[b]!.push(id);
      stepLogits[b]!.push(rowLogits[b]!);
    });
    if (t === steps - 1) break;
    const T = mask.length / B;
    const real = Array.from({ length: B }, (_, b) => mask.slice(b * T, (b + 1) * T).reduce((a, m) => a + m, 0));
    mask = Array.from({ length: B * (T + 1) }, (_, k) => (k % (T + 1) === T ? 1 : mask[Math.floor(k / (T + 1)) * T + (k % (T + 1))]!));
    out = await step(session, cfg, {
      B,
      S: 1,
      ids: next,
      moeType: next.map(() => 0),
      mask,
      positionIds: ernieDecodePositions(deltas, real).positionIds,
      past: out.present,
    });
    times.push(out.ms);
    rowLogits = Array.from({ length: B }, (_, b) => out.logits.slice(b * V, (b + 1) * V));
  }
  return { ids, stepLogits, medianMs: times.sort((a, b) => a - b)[times.length >> 1] ?? 0 };
}

/** Worst max |diff| / max |expected| over rows and steps, against expected [B, N, V]. */
function worstStepError(stepLogits: Float32Array[][], want: Float32Array, V: number): number {
  let worst = 0;
  stepLogits.forEach((row, b) => {
    row.forEach((l, t) => {
      const ref = want.subarray((b * row.length + t) * V, (b * row.length + t + 1) * V);
      worst = Math.max(worst, maxAbsDiff(l, ref) / maxAbs(ref));
    });
  });
  return worst;
}

/**
 * The bf16 checkpoint (router gates and correction biases stay float32).
 * The decoder casts bf16 weights up and computes in float32; HF's bf16 case
 * computes in bf16, which alone moves its logits by ~0.17 of max |logits|
 * from the float32 run on the same inputs (routing flips at some tokens).
 * So the numbers are held to HF run in float32 on the same bf16-rounded
 * weights and that run's image rows (tools/moe-decoder/bf16_as_f32.py ->
 * test-fixtures/moe-decoder/), at the float32 tolerance, and the greedy ids
 * also to HF's bf16 run.
 */
const BF16 = 'ernie-tiny-bf16';
requireFixtures(
  [BF16, 'config.json'],
  [MODEL, 'cases', 'bf16', 'expected.safetensors'],
  ['moe-decoder', 'ernie-tiny-bf16-as-f32', 'expected.safetensors'],
);
describe('ERNIE text decoder on a bf16 checkpoint', () => {
  it('bf16: logits and greedy step logits match HF in float32 on the same weights; greedy ids match HF in bf16 too', async () => {
    const top = await readJson(BF16, 'config.json');
    const cfg = ernieTextConfigFromHf(top);
    const ckpt = await Checkpoint.open(join(FIXTURES, BF16));
    try {
      const weights = (await mapErnieDecoder(ckpt, cfg)).decoder;
      expect(weights.get('layers.1.self_attn.qkv_proj.weight').dtype).toBe('bfloat16');
      expect(weights.get('layers.1.mlp.text_experts_gate.weight').dtype).toBe('float32');
      const session = await sessionFor(buildErnieTextDecoderModel(weights, cfg));
      const c = await loadCase(MODEL, 'bf16');
      const asF32 = await readAll('moe-decoder', 'ernie-tiny-bf16-as-f32', 'expected.safetensors');
      // The image rows of the float32 run: the bf16 case's own image_embeds carry the tower's bf16 arithmetic.
      const x = promptStep({ ...c, expected: { ...c.expected, image_embeds: asF32.image_embeds! } }, top);
      const out = await step(session, cfg, x);
      const err = relErr(out.logits, asF32.logits!.data as Float32Array, x.realRows, cfg.vocabSize);
      const errBf16 = relErr(out.logits, c.expected.logits!.data as Float32Array, x.realRows, cfg.vocabSize);
      const g = await greedy(session, cfg, x, c.expected.generated_ids!.shape[1]!, numbers(c.expected.rope_deltas!));
      const worst = worstStepError(g.stepLogits, asF32.generated_logits!.data as Float32Array, cfg.vocabSize);
      console.log(
        `[ernie-tiny-bf16] rel err logits vs HF f32 ${err.toExponential(2)} (vs HF bf16 ${errBf16.toExponential(2)}); greedy ${JSON.stringify(g.ids)}, worst step rel err ${worst.toExponential(2)}`,
      );
      expect(err).toBeLessThan(REL_TOL);
      expect(worst).toBeLessThan(REL_TOL);
      expect(g.ids.flat()).toEqual(numbers(asF32.generated_ids!));
      expect(g.ids.flat()).toEqual(numbers(c.expected.generated_ids!));
      await session.release();
    } finally {
      await ckpt.close();
    }
  });
});
