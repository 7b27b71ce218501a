import { join } from 'node:path';
import { applyPasses, type Graph } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { mapQwen3VL } from '@vlmkit/weight-mapper';
import type ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DECODER_OUTPUTS } from '../kv-io.js';
import { FIXTURES, numbers, readAll, readJson, requireFixtures } from '../test-utils/fixtures.js';
import { OPS_VARIANTS } from '../test-utils/ops-variants.js';
import { type Feed, f32, i64, maxAbs, maxAbsDiff, run, sessionFor } from '../test-utils/ort.js';
import { pastOrEmpty } from '../test-utils/runner.js';
import { type Qwen3VlTextConfig, qwen3VlTextConfigFromHf } from './config.js';
import { qwen3VlTextExpectedParameters } from './parameters.js';
import { buildQwen3VlTextDecoderModel, QWEN3VL_DEBUG_OUTPUTS, QWEN3VL_DECODER_INPUTS } from './standalone.js';

/**
 * The Qwen3-VL text decoder against HF transformers 5.17 (tools/moe-decoder/qwen3_vl_text.py): random
 * Qwen3VLTextModel (2 layers, attention_bias, tied head) and Qwen3VLMoeTextModel (3 layers: sparse, dense,
 * sparse; 4 experts, top-2; untied), D 32, 4 q / 2 kv heads of 16, mrope_section [4, 2, 2]; a left-padded
 * batch of 2 with 7 vision rows and 2 deepstack levels. Mapped from HF 5.17 names by @vlmkit/weight-mapper.
 * Tolerance: max |diff| / max |expected| over real positions < 1e-4.
 */
const MODELS = ['qwen3-vl-text-dense', 'qwen3-vl-text-moe'];
const REL_TOL = 1e-4;
requireFixtures(
  ...MODELS.flatMap((m) => [
    ['moe-decoder', m, 'config.json'],
    ['moe-decoder', m, 'case.safetensors'],
  ]),
);

interface Step {
  B: number;
  S: number;
  ids: number[];
  mask: number[];
  /** [3, B, S] */
  positionIds: number[];
  vision: { positions: number[]; embeds: Float32Array; deepstack: Float32Array[] };
  past?: { key: ort.Tensor; value: ort.Tensor }[];
}

async function step(session: ort.InferenceSession, cfg: Qwen3VlTextConfig, x: Step) {
  const { B, S, vision } = x;
  const n = vision.positions.length;
  const D = cfg.hiddenSize;
  const feeds = QWEN3VL_DECODER_INPUTS.feeds<Feed>({
    input_ids: i64([B, S], x.ids),
    vision_embeds: f32([n, D], vision.embeds),
    vision_positions: i64([n], vision.positions),
    deepstack: vision.deepstack.map((d) => f32([n, D], d)),
    attention_mask: i64([B, x.mask.length / B], x.mask),
    position_ids: i64([3, B, S], x.positionIds),
    past_key_values: pastOrEmpty(x.past, cfg.numHiddenLayers, [B, cfg.numKeyValueHeads, 0, cfg.headDim]),
  });
  const out = await run(session, feeds);
  const present = Array.from({ length: cfg.numHiddenLayers }, (_, i) => ({
    key: out[`present.${i}.key`]!,
    value: out[`present.${i}.value`]!,
  }));
  return { logits: out[DECODER_OUTPUTS.names.logits]!.data as Float32Array, present, raw: out };
}

describe.each(MODELS)('Qwen3-VL text decoder vs HF transformers 5.17 (test-fixtures/moe-decoder/%s)', (model) => {
  let cfg: Qwen3VlTextConfig;
  let ckpt: Checkpoint;
  let build: (passes: readonly import('@vlmkit/onnx-graph').GraphPass[]) => Graph;
  let x: Step;
  let want: Float32Array;
  let real: boolean[];

  beforeAll(async () => {
    cfg = qwen3VlTextConfigFromHf(await readJson('moe-decoder', model, 'config.json'));
    ckpt = await Checkpoint.open(join(FIXTURES, 'moe-decoder', model, 'model.safetensors'));
    const parameters = qwen3VlTextExpectedParameters(cfg);
    const { decoder, report } = await mapQwen3VL(
      ckpt,
      { vision: { parameters: [] }, decoder: { parameters, config: cfg } },
      { strict: true },
    );
    expect(report.missing).toEqual([]);
    build = (passes) => {
      const g = buildQwen3VlTextDecoderModel(decoder, cfg, { deepstackLevels: 2, outputRouting: true });
      applyPasses(g, passes);
      return g;
    };
    const c = await readAll('moe-decoder', model, 'case.safetensors');
    const [B, S] = c.input_ids!.shape as [number, number];
    const mask = numbers(c.attention_mask!);
    x = {
      B,
      S,
      ids: numbers(c.input_ids!),
      mask,
      positionIds: numbers(c.position_ids!),
      vision: {
        positions: numbers(c.vision_positions!),
        embeds: c.vision_embeds!.data as Float32Array,
        deepstack: [0, 1].map((k) => c[`deepstack_${k}`]!.data as Float32Array),
      },
    };
    want = c.logits!.data as Float32Array;
    real = mask.map((m) => m === 1);
  });
  afterAll(async () => {
    await ckpt?.close();
  });

  const relErr = (got: Float32Array) => {
    const keep = (i: number) => real[Math.floor(i / cfg.vocabSize)]!;
    return maxAbsDiff(got, want, keep) / maxAbs(want, keep);
  };

  it.each(OPS_VARIANTS)('the logits match the forward ($label)', async ({ passes }) => {
    const g = build(passes);
    if (passes.length > 0) {
      // The contrib passes took every attention and, in sparse layers, the experts.
      const ops = (op: string) => g.snapshot().nodes.filter((n) => n.opType === op && n.domain === 'com.microsoft').length;
      expect(ops('MoE')).toBe(cfg.mlpLayerTypes.filter((t) => t === 'sparse').length);
      expect(ops('MultiHeadAttention') + ops('GroupQueryAttention')).toBe(cfg.numHiddenLayers);
    }
    const session = await sessionFor(g);
    const out = await step(session, cfg, x);
    const err = relErr(out.logits);
    console.log(`[${model}] logits rel err ${err.toExponential(2)} (${passes.map((p) => p.name).join(', ') || 'standard ops'})`);
    expect(err).toBeLessThan(REL_TOL);
    await session.release();
  });

  it('without the deepstack features, or with them one layer late, the logits are far off', async () => {
    const session = await sessionFor(build([]));
    const zero = x.vision.deepstack.map((d) => new Float32Array(d.length));
    const shifted = [zero[0]!, x.vision.deepstack[0]!];
    for (const deepstack of [zero, shifted]) {
      const out = await step(session, cfg, { ...x, vision: { ...x.vision, deepstack } });
      expect(relErr(out.logits)).toBeGreaterThan(1e-2);
    }
    await session.release();
  });

  it('a prefill split in two steps (KV cache between, vision rows in both) equals the full forward', async () => {
    const session = await sessionFor(build([]));
    // Row 0 alone: its vision rows are 2..5; the cut at 4 splits them.
    const { S, vision } = x;
    const D = cfg.hiddenSize;
    const cut = 4;
    const row0 = vision.positions.flatMap((p, n) => (p < S ? [n] : []));
    const part = (from: number, to: number, past?: Step['past']): Step => {
      const rows = row0.filter((n) => vision.positions[n]! >= from && vision.positions[n]! < to);
      const pick = (a: Float32Array) => a.slice(rows[0]! * D, (rows.at(-1)! + 1) * D);
      return {
        B: 1,
        S: to - from,
        ids: x.ids.slice(from, to),
        mask: x.mask.slice(0, to),
        positionIds: [0, 1, 2].flatMap((a) => x.positionIds.slice(a * 2 * S + from, a * 2 * S + to)),
        vision: {
          positions: rows.map((n) => vision.positions[n]! - from),
          embeds: pick(vision.embeds),
          deepstack: vision.deepstack.map(pick),
        },
        ...(past ? { past } : {}),
      };
    };
    const first = await step(session, cfg, part(0, cut));
    const second = await step(session, cfg, part(cut, S, first.present));
    const V = cfg.vocabSize;
    const ref = want.subarray(cut * V, S * V);
    const err = maxAbsDiff(second.logits, ref) / maxAbs(ref);
    console.log(`[${model}] prefill ${cut} + ${S - cut}: rel err ${err.toExponential(2)}`);
    expect(err).toBeLessThan(REL_TOL);
    await session.release();
  });

  it('the mapper supplies exactly the expected parameters; a sparse layer routes to k experts with weights summing to 1', async () => {
    const session = await sessionFor(build([]));
    const out = await step(session, cfg, x);
    cfg.mlpLayerTypes.forEach((t, i) => {
      const ids = out.raw[QWEN3VL_DEBUG_OUTPUTS.routerTopkIds(i)];
      expect(ids === undefined, `layer ${i}`).toBe(t === 'dense');
      if (ids === undefined) return;
      const w = out.raw[QWEN3VL_DEBUG_OUTPUTS.routerTopkWeights(i)]!.data as Float32Array;
      const k = cfg.moe!.topK;
      for (let r = 0; r < w.length / k; r++) expect(w.slice(r * k, (r + 1) * k).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
    });
    await session.release();
  });
});
