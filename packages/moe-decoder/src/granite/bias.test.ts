import { join } from 'node:path';
import { tensorFromSafetensors, Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { describe, expect, it } from 'vitest';
import { FIXTURES, numbers, readAll, readJson, requireFixtures } from '../test-utils/fixtures.js';
import { graniteStep } from '../test-utils/granite-runner.js';
import { maxAbs, maxAbsDiff, sessionFor } from '../test-utils/ort.js';
import { graniteTextConfigFromHf } from './config.js';
import { graniteTextExpectedParameters } from './parameters.js';
import { buildGraniteTextDecoderModel } from './standalone.js';

/**
 * attention_bias, mlp_bias and an untied lm_head (paths granite-tiny does not
 * have) against HF transformers 5.17's Granite4VisionTextModel on random
 * weights: test-fixtures/moe-decoder/granite-text-bias, written by
 * tools/moe-decoder/granite_bias.py (left-padded batch of 2, 4 image rows,
 * levels on layers 2 and 0). Tolerance: max |diff| / max |expected| over
 * real positions < 1e-4.
 */
const DIR = ['moe-decoder', 'granite-text-bias'];
requireFixtures([...DIR, 'case.safetensors']);

describe('Granite decoder with biases and an untied head vs HF 5.17 (test-fixtures/moe-decoder/granite-text-bias)', () => {
  it('logits and every layer match', async () => {
    const meta = await readJson(...DIR, 'config.json');
    const cfg = graniteTextConfigFromHf(meta);
    expect(cfg).toMatchObject({ attentionBias: true, mlpBias: true, tieWordEmbeddings: false });
    const levels = meta.levels as number[];
    const ckpt = await Checkpoint.open(join(FIXTURES, ...DIR, 'weights.safetensors'));
    try {
      const expected = graniteTextExpectedParameters(cfg);
      expect([...ckpt.names()].sort()).toEqual(expected.map((p) => p.name).sort());
      const weights = Weights.from(Object.fromEntries(expected.map((p) => [p.name, tensorFromSafetensors(ckpt.info(p.name))])));
      const session = await sessionFor(buildGraniteTextDecoderModel(weights, cfg, { levels, outputHiddenStates: true }));
      const c = await readAll(...DIR, 'case.safetensors');
      const [B, S] = c.input_ids!.shape as [number, number];
      const mask = numbers(c.attention_mask!);
      const out = await graniteStep(session, cfg, levels.length, {
        B,
        S,
        ids: numbers(c.input_ids!),
        mask,
        positionIds: BigInt64Array.from(numbers(c.position_ids!), BigInt),
        image: { positions: numbers(c.image_positions!), levels: levels.map((_, k) => c[`deepstack_${k}`]!.data as Float32Array) },
      });
      const rel = (got: Float32Array, want: Float32Array, width: number) => {
        const keep = (i: number) => mask[Math.floor(i / width)] === 1;
        return maxAbsDiff(got, want, keep) / maxAbs(want, keep);
      };
      const errs = Array.from({ length: cfg.numHiddenLayers }, (_, l) =>
        rel(out.raw[`hidden_states.${l}`]!.data as Float32Array, c[`hidden_layer_${l}`]!.data as Float32Array, cfg.hiddenSize),
      );
      errs.push(rel(out.logits, c.logits!.data as Float32Array, cfg.vocabSize));
      console.log(
        `[granite-text-bias] rel err layers ${errs
          .slice(0, -1)
          .map((e) => e.toExponential(2))
          .join(' ')}, logits ${errs.at(-1)!.toExponential(2)}`,
      );
      for (const e of errs) expect(e).toBeLessThan(1e-4);
      await session.release();
    } finally {
      await ckpt.close();
    }
  });
});
