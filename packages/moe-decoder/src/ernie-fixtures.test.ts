import { join } from 'node:path';
import { Checkpoint } from '@vlmkit/safetensors';
import type ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ErnieTextConfig, ernieTextConfigFromHf } from './ernie-config.js';
import { buildErnieTextDecoderModel } from './ernie-model.js';
import { ernieDecodePositions } from './ernie-rotary.js';
import { FIXTURES, type FixtureCase, fixtureExists, loadCase, numbers, readJson } from './test-utils/fixtures.js';
import { ernieHubWeights } from './test-utils/hub-weights.js';
import { maxAbs, maxAbsDiff, sessionFor } from './test-utils/ort.js';
import { type StepInput, argmax, step } from './test-utils/runner.js';

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
const have = fixtureExists(MODEL, 'config.json') && CASES.every((c) => fixtureExists(MODEL, 'cases', c, 'expected.safetensors'));

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
  for (const [m, tokenKey] of [['image', 'image_token_id'], ['video', 'video_token_id']] as const) {
    const rows = c.expected[`${m}_embeds`];
    if (rows === undefined) continue;
    const D = rows.shape[1]!;
    const at = ids.flatMap((id, n) => (id === top[tokenKey] ? [n] : []));
    positions.push(...at);
    embeds.push((rows.data as Float32Array).subarray(0, at.length * D));
  }
  const all = new Float32Array(embeds.reduce((a, e) => a + e.length, 0));
  embeds.reduce((o, e) => (all.set(e, o), o + e.length), 0);
  return { B, S, ids, moeType, mask, positionIds, vision: { positions, embeds: all }, realRows: mask.map((m) => m === 1) };
}

function relErr(got: Float32Array, want: Float32Array, rows: boolean[], width: number): number {
  const keep = (i: number) => rows[Math.floor(i / width)]!;
  return maxAbsDiff(got, want, keep) / maxAbs(want, keep);
}

describe.skipIf(!have)('ERNIE text decoder vs HF transformers 5.17 (test-fixtures/ernie-tiny)', () => {
  let cfg: ErnieTextConfig;
  let top: Record<string, unknown>;
  let ckpt: Checkpoint;
  let session: ort.InferenceSession;
  const cases = new Map<string, FixtureCase>();

  beforeAll(async () => {
    top = await readJson(MODEL, 'config.json');
    cfg = ernieTextConfigFromHf(top);
    ckpt = await Checkpoint.open(join(FIXTURES, MODEL));
    const t0 = performance.now();
    session = await sessionFor(buildErnieTextDecoderModel(ernieHubWeights(ckpt, cfg), cfg, { outputHiddenStates: true }));
    console.log(`[ernie-tiny] build + session create: ${(performance.now() - t0).toFixed(0)} ms`);
    for (const name of CASES) cases.set(name, await loadCase(MODEL, name));
  });
  afterAll(async () => {
    await session?.release();
    await ckpt?.close();
  });

  for (const name of CASES) {
    it(`${name}: logits and every layer's hidden state match the prompt forward`, async () => {
      const c = cases.get(name)!;
      const x = promptStep(c, top);
      const out = await step(session, cfg, x);
      const errs = [relErr(out.logits, c.expected.logits!.data as Float32Array, x.realRows, cfg.vocabSize)];
      out.hidden.forEach((h, l) => errs.push(relErr(h, c.expected[`hidden_layer_${l}`]!.data as Float32Array, x.realRows, cfg.hiddenSize)));
      console.log(`[ernie-tiny/${name}] rel err logits ${errs[0]!.toExponential(2)}, layers ${errs.slice(1).map((e) => e.toExponential(2)).join(' ')}; forward ${out.ms.toFixed(1)} ms`);
      for (const e of errs) expect(e).toBeLessThan(REL_TOL);
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
    console.log(`[ernie-tiny/images] prefill ${full.S - 1} + decode 1: rel err ${err.toExponential(2)}; decode step ${dec.ms.toFixed(1)} ms`);
    expect(err).toBeLessThan(REL_TOL);
  });

  for (const name of CASES) {
    it(`${name}: a greedy decode loop with the KV cache reproduces generated_ids and their logits`, async () => {
      const c = cases.get(name)!;
      const x = promptStep(c, top);
      const { B, S } = x;
      const V = cfg.vocabSize;
      const want = numbers(c.expected.generated_ids!);
      const wantLogits = c.expected.generated_logits!.data as Float32Array;
      const steps = c.expected.generated_ids!.shape[1]!;
      const deltas = numbers(c.expected.rope_deltas!);
      let out = await step(session, cfg, x);
      let mask = x.mask;
      let rowLogits = Array.from({ length: B }, (_, b) => out.logits.subarray((b * S + S - 1) * V, (b * S + S) * V));
      const got: number[][] = Array.from({ length: B }, () => []);
      let worst = 0;
      const times: number[] = [];
      for (let t = 0; t < steps; t++) {
        const next = rowLogits.map((l) => argmax(l, 0, V));
        rowLogits.forEach((l, b) => {
          const ref = wantLogits.subarray((b * steps + t) * V, (b * steps + t + 1) * V);
          worst = Math.max(worst, maxAbsDiff(l, ref) / maxAbs(ref));
        });
        next.forEach((id, b) => got[b]!.push(id));
        if (t === steps - 1) break;
        // The new token's position: real tokens so far in the row + the prompt's rope delta, on all three axes.
        const T = mask.length / B;
        const real = Array.from({ length: B }, (_, b) => mask.slice(b * T, (b + 1) * T).reduce((a, m) => a + m, 0));
        mask = Array.from({ length: B * (T + 1) }, (_, k) => (k % (T + 1) === T ? 1 : mask[Math.floor(k / (T + 1)) * T + (k % (T + 1))]!));
        out = await step(session, cfg, { B, S: 1, ids: next, moeType: next.map(() => 0), mask, positionIds: ernieDecodePositions(deltas, real).positionIds, past: out.present });
        times.push(out.ms);
        rowLogits = Array.from({ length: B }, (_, b) => out.logits.subarray(b * V, (b + 1) * V));
      }
      console.log(`[ernie-tiny/${name}] greedy ${steps} steps: ids ${JSON.stringify(got)}; worst step-logit rel err ${worst.toExponential(2)}; decode step median ${times.sort((a, b) => a - b)[times.length >> 1]!.toFixed(1)} ms`);
      expect(got.flat()).toEqual(want);
      expect(worst).toBeLessThan(REL_TOL);
    });
  }
});
