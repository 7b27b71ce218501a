import { join } from 'node:path';
import { applyPasses, type Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import type ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, type FixtureCase, loadCase, numbers, readJson, requireFixtures } from '../test-utils/fixtures.js';
import { type GraniteStepInput, graniteStep } from '../test-utils/granite-runner.js';
import { mapGraniteDecoder } from '../test-utils/map-decoder.js';
import { OPS_VARIANTS } from '../test-utils/ops-variants.js';
import { maxAbs, maxAbsDiff, sessionFor } from '../test-utils/ort.js';
import { argmax } from '../test-utils/runner.js';
import { type GraniteTextConfig, graniteTextConfigFromHf } from './config.js';
import { graniteDeepstackLevels } from './levels.js';
import { graniteTextExpectedParameters } from './parameters.js';
import { graniteDecodePositions, granitePositionIds } from './rotary.js';
import { buildGraniteTextDecoderModel } from './standalone.js';

/**
 * The Granite decoder against HF transformers 5.17 on test-fixtures/granite-tiny
 * (random 8-layer Granite: D 64, 4 q / 2 kv heads of 16, embedding_multiplier 2,
 * attention_multiplier 0.5, residual_multiplier 0.7, logits_scaling 0.75;
 * 8 deepstack levels on layers 0..7). The image features are the reference's
 * own `image_features_level_{k}` at the image-token rows (input_ids ==
 * image_token_index, checked equal to `image_token_mask`). Tolerance:
 * max |diff| / max |expected| over real (unpadded) positions < 1e-4.
 */
const MODEL = 'granite-tiny';
const CASES = ['anyres', 'batch-2'];
const REL_TOL = 1e-4;
requireFixtures([MODEL, 'config.json'], ...CASES.map((c) => [MODEL, 'cases', c, 'expected.safetensors']));

/** The prompt step of a case: ids, mask, positions (the case's `position_ids`, else arange as HF forward does), image rows and level features. */
function promptStep(c: FixtureCase, top: Record<string, unknown>, numLevels: number): GraniteStepInput & { realRows: boolean[] } {
  const [B, S] = c.inputs.input_ids!.shape as [number, number];
  const ids = numbers(c.inputs.input_ids!);
  const mask = numbers(c.inputs.attention_mask!);
  const positionIds = c.inputs.position_ids
    ? BigInt64Array.from(numbers(c.inputs.position_ids), BigInt)
    : BigInt64Array.from({ length: B * S }, (_, n) => BigInt(n % S));
  const positions = ids.flatMap((id, n) => (id === top['image_token_index'] ? [n] : []));
  const levels = Array.from({ length: numLevels }, (_, k) => c.expected[`image_features_level_${k}`]!.data as Float32Array);
  return { B, S, ids, mask, positionIds, image: { positions, levels }, realRows: mask.map((m) => m === 1) };
}

function relErr(got: Float32Array, want: Float32Array, rows: boolean[], width: number): number {
  const keep = (i: number) => rows[Math.floor(i / width)]!;
  return maxAbsDiff(got, want, keep) / maxAbs(want, keep);
}

describe.each(OPS_VARIANTS)('Granite text decoder vs HF transformers 5.17 (test-fixtures/granite-tiny), $label', ({
  options: ops,
  passes,
}) => {
  let cfg: GraniteTextConfig;
  let top: Record<string, unknown>;
  let levels: number[];
  let ckpt: Checkpoint;
  let session: ort.InferenceSession;
  let decoderWeights: Weights;
  const cases = new Map<string, FixtureCase>();

  beforeAll(async () => {
    top = await readJson(MODEL, 'config.json');
    cfg = graniteTextConfigFromHf(top);
    levels = graniteDeepstackLevels(top);
    ckpt = await Checkpoint.open(join(FIXTURES, MODEL));
    const t0 = performance.now();
    const { decoder, report } = await mapGraniteDecoder(ckpt, cfg);
    expect(report.missing).toEqual([]);
    decoderWeights = decoder;
    const g = buildGraniteTextDecoderModel(decoder, cfg, { levels, outputHiddenStates: true, ...ops });
    applyPasses(g, passes);
    session = await sessionFor(g);
    console.log(`[granite-tiny] build + session create: ${(performance.now() - t0).toFixed(0)} ms`);
    for (const name of CASES) cases.set(name, await loadCase(MODEL, name));
  });
  afterAll(async () => {
    await session?.release();
    await ckpt?.close();
  });

  it('the weight mapper supplies exactly the expected parameters, and the tied table is stored once', () => {
    const expected = graniteTextExpectedParameters(cfg);
    expect(decoderWeights.names()).toEqual(expected.map((p) => p.name).sort());
    for (const p of expected) expect([p.name, decoderWeights.get(p.name).shape]).toEqual([p.name, p.shape]);
    const { initializers } = buildGraniteTextDecoderModel(decoderWeights, cfg, { levels }).snapshot();
    const emb = decoderWeights.get('embed_tokens.weight');
    const same = (r: typeof emb) => r.kind === 'file' && emb.kind === 'file' && r.path === emb.path && r.byteOffset === emb.byteOffset;
    expect(initializers.filter((e) => same(e.ref)).map((e) => e.name)).toEqual(['decoder.embed_tokens.weight']);
  });

  it("the level map from config.json equals the fixtures' image_features_llm_layers and case.json levels", () => {
    for (const name of CASES) {
      const c = cases.get(name)!;
      expect(levels).toEqual(numbers(c.expected.image_features_llm_layers!));
      expect(levels).toEqual((c.meta.levels as { llm_layer: number }[]).map((l) => l.llm_layer));
    }
  });

  for (const name of CASES) {
    it(`${name}: inputs_embeds, layer-0 input, every layer's output and the logits match the prompt forward`, async () => {
      const c = cases.get(name)!;
      const x = promptStep(c, top, levels.length);
      const mask = numbers(c.expected.image_token_mask!);
      expect(x.image!.positions).toEqual(mask.flatMap((m, n) => (m ? [n] : [])));
      expect(x.image!.positions.length * cfg.hiddenSize).toBe(x.image!.levels[0]!.length);
      const out = await graniteStep(session, cfg, levels.length, x);
      const D = cfg.hiddenSize;
      const f = (k: string) => out.raw[k]!.data as Float32Array;
      const e = (k: string) => c.expected[k]!.data as Float32Array;
      const errEmb = relErr(f('inputs_embeds'), e('inputs_embeds'), x.realRows, D);
      const errIn0 = relErr(f('layer_inputs.0'), e('decoder_input_layer_0'), x.realRows, D);
      const errLayers = Array.from({ length: cfg.numHiddenLayers }, (_, l) =>
        relErr(f(`hidden_states.${l}`), e(`hidden_layer_${l}`), x.realRows, D),
      );
      const errLogits = relErr(out.logits, e('logits'), x.realRows, cfg.vocabSize);
      console.log(
        `[granite-tiny/${name}] rel err inputs_embeds ${errEmb.toExponential(2)}, layer-0 input ${errIn0.toExponential(2)}, ` +
          `layers ${errLayers.map((v) => v.toExponential(2)).join(' ')}, logits ${errLogits.toExponential(2)}; forward ${out.ms.toFixed(1)} ms`,
      );
      for (const err of [errEmb, errIn0, ...errLayers, errLogits]) expect(err).toBeLessThan(REL_TOL);
    });
  }

  it('without the deepstack features the logits are far from the reference (the injection is what matches)', async () => {
    const c = cases.get('anyres')!;
    const x = promptStep(c, top, levels.length);
    const zero = { ...x, image: { positions: x.image!.positions, levels: x.image!.levels.map((l) => new Float32Array(l.length)) } };
    const out = await graniteStep(session, cfg, levels.length, zero);
    expect(relErr(out.logits, c.expected.logits!.data as Float32Array, x.realRows, cfg.vocabSize)).toBeGreaterThan(1e-2);
  });

  it('anyres: a chunked prefill (the image rows split across two steps, KV cache between) equals the full forward', async () => {
    const c = cases.get('anyres')!;
    const full = promptStep(c, top, levels.length);
    const D = cfg.hiddenSize;
    const pos = full.image!.positions;
    const cut = pos[Math.floor(pos.length / 2)]!; // the second chunk starts in the middle of the image
    const chunk = (from: number, to: number): GraniteStepInput => {
      const rows = pos.flatMap((p, n) => (p >= from && p < to ? [n] : []));
      return {
        B: 1,
        S: to - from,
        ids: full.ids.slice(from, to),
        mask: full.mask.slice(0, to),
        positionIds: full.positionIds.slice(from, to),
        // Positions are relative to the chunk; each level's rows are the ones whose tokens fall in it.
        image: {
          positions: rows.map((n) => pos[n]! - from),
          levels: full.image!.levels.map((l) => l.slice(rows[0]! * D, (rows.at(-1)! + 1) * D)),
        },
      };
    };
    const first = await graniteStep(session, cfg, levels.length, chunk(0, cut));
    const second = await graniteStep(session, cfg, levels.length, { ...chunk(cut, full.S), past: first.present });
    const V = cfg.vocabSize;
    const want = (c.expected.logits!.data as Float32Array).subarray(cut * V);
    const err = maxAbsDiff(second.logits, want) / maxAbs(want);
    console.log(`[granite-tiny/anyres] prefill ${cut} + ${full.S - cut} tokens: rel err ${err.toExponential(2)}`);
    expect(err).toBeLessThan(REL_TOL);
  });

  it("batch-2: the case's position_ids are HF generate's (cumsum(mask) - 1, 0 on padding)", () => {
    const c = cases.get('batch-2')!;
    expect(Array.from(granitePositionIds(numbers(c.inputs.attention_mask!), 2), Number)).toEqual(numbers(c.inputs.position_ids!));
  });

  for (const name of CASES) {
    it(`${name}: a greedy decode loop with the KV cache reproduces generated_ids and their logits`, async () => {
      const c = cases.get(name)!;
      const x = promptStep(c, top, levels.length);
      const steps = c.expected.generated_ids!.shape[1]!;
      const g = await greedy(session, cfg, levels.length, x, steps);
      const worst = worstStepError(g.stepLogits, c.expected.generated_logits!.data as Float32Array, cfg.vocabSize);
      console.log(
        `[granite-tiny/${name}] greedy ${steps} steps: ids ${JSON.stringify(g.ids)}; worst step-logit rel err ${worst.toExponential(2)}; decode step median ${g.medianMs.toFixed(1)} ms`,
      );
      expect(g.ids.flat()).toEqual(numbers(c.expected.generated_ids!));
      expect(worst).toBeLessThan(REL_TOL);
    });
  }
});

/**
 * Greedy generation with the KV cache: prefill with the image features, then
 * one token per row per step with no image rows (N = 0); the new token's
 * position is its row's count of real tokens so far (HF generate:
 * cumsum(mask) - 1 on the grown mask).
 */
async function greedy(session: ort.InferenceSession, cfg: GraniteTextConfig, numLevels: number, x: GraniteStepInput, steps: number) {
  const { B, S } = x;
  const V = cfg.vocabSize;
  let out = await graniteStep(session, cfg, numLevels, x);
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
    out = await graniteStep(session, cfg, numLevels, {
      B,
      S: 1,
      ids: next,
      mask,
      positionIds: graniteDecodePositions(real),
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
