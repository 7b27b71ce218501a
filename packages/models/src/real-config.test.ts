/**
 * The real checkpoints' shapes, without their weights: every graph builds for
 * the published configs of ERNIE-4.5-VL-28B-A3B and granite-4.0-3b-vision
 * (shape checks at real sizes, the expected parameter lists agree with what
 * the builders read). Weights are lazy tensors that fail if anything tries to
 * read them, so this costs milliseconds, not 56 GB.
 */

import {
  buildErnieTextDecoderModel,
  buildGraniteTextDecoderModel,
  ernieTextExpectedParameters,
  graniteTextConfigFromHf,
  graniteTextExpectedParameters,
} from '@vlmkit/moe-decoder';
import { everyNode, type Graph, lazyTensor, moeExpertsPass, type TensorRef, Weights } from '@vlmkit/onnx-graph';
import { expectedParameters as windowParameters } from '@vlmkit/qformer';
import { expectedParameters as resamplerParameters } from '@vlmkit/resampler';
import { expectedErnieVisionParameters, expectedSiglipVisionParameters } from '@vlmkit/vision-tower';
import { describe, expect, it } from 'vitest';
import { ernie45VLConfig } from './ernie/config.js';
import { ernie28b } from './ernie/published-config.js';
import { buildErnieVisionEncoder } from './ernie/vision-encoder.js';
import { granite4VisionConfig } from './granite/config.js';
import { granite3b } from './granite/published-config.js';
import { buildGraniteVisionEncoder } from './granite/vision-encoder.js';

function unread(specs: readonly { name: string; shape: readonly number[] }[], dtype = 'bfloat16', prefix = ''): Map<string, TensorRef> {
  const m = new Map<string, TensorRef>();
  for (const s of specs) {
    m.set(
      prefix + s.name,
      lazyTensor(dtype, s.shape, async () => {
        throw new Error(`${s.name} must not be read while building`);
      }),
    );
  }
  return m;
}

/** Node count and checkpoint parameters embedded (the bf16 initializers; constants the builders add are float32/int64). */
function stats(g: Graph): { nodes: number; params: number } {
  const snap = g.snapshot();
  const weights = snap.initializers.filter((e) => e.ref.dtype === 'bfloat16');
  return { nodes: snap.nodes.length, params: weights.reduce((a, e) => a + e.ref.shape.reduce((x, y) => x * y, 1), 0) };
}

describe('graphs build for the published configs (no weights read)', () => {
  it('ERNIE-4.5-VL-28B-A3B: vision encoder (0.6B) and MoE decoder (28B), as built and its experts as MoE', () => {
    const config = ernie45VLConfig(ernie28b);
    const t0 = performance.now();
    const vision = buildErnieVisionEncoder(config, {
      vision: Weights.from(unread(expectedErnieVisionParameters(config.vision))),
      resampler: Weights.from(unread(resamplerParameters(config.resampler))),
    });
    const decoderWeights = Weights.from(unread(ernieTextExpectedParameters(config.text)));
    const sparse = buildErnieTextDecoderModel(decoderWeights, config.text);
    // The pass packs the experts lazily: nothing is read.
    const fused = buildErnieTextDecoderModel(decoderWeights, config.text, { passes: [moeExpertsPass] });
    const ms = performance.now() - t0;
    const [v, s] = [stats(vision), stats(sparse)];
    // Published sizes: ~28.3B parameters in all (text + vision + resampler), tied head stored once.
    expect((v.params + s.params) / 1e9).toBeGreaterThan(27);
    expect((v.params + s.params) / 1e9).toBeLessThan(30);
    // One MoE per modality in each of the 27 MoE layers, every per-expert weight gone.
    expect([...everyNode(fused.snapshot().nodes)].filter((n) => n.opType === 'MoE')).toHaveLength(2 * 27);
    expect(fused.snapshot().initializers.some((e) => /_experts\.\d+\./.test(e.name))).toBe(false);
    expect(ms).toBeLessThan(20_000);
  });

  it('granite-4.0-3b-vision: vision encoder (SigLIP + 8 projectors) and the 40-layer decoder', () => {
    const config = granite4VisionConfig(granite3b);
    const text = graniteTextConfigFromHf(granite3b);
    const projectors = new Map<string, TensorRef>([['image_newline', lazyTensor('bfloat16', [2560], async () => new Uint16Array(2560))]]);
    for (const p of ['layerwise_projectors', 'spatial_projectors']) {
      for (let k = 0; k < 4; k++)
        for (const [n, r] of unread(windowParameters(config.projector), 'bfloat16', `${p}.${k}.`)) projectors.set(n, r);
    }
    const vision = buildGraniteVisionEncoder(config, {
      vision: Weights.from(unread(expectedSiglipVisionParameters(config.vision))),
      projectors: Weights.from(projectors),
    });
    const decoder = buildGraniteTextDecoderModel(Weights.from(unread(graniteTextExpectedParameters(text))), text, {
      levels: config.levels.map((l) => l.llmLayer),
    });
    expect(config.levels.map((l) => l.llmLayer)).toEqual([9, 6, 3, 0, 12, 15, 18, 21]);
    const [v, d] = [stats(vision), stats(decoder)];
    // ~0.4B SigLIP + 8 x ~21M projectors; ~3.5B decoder with the tied 100353 x 2560 table.
    expect(v.params / 1e6).toBeGreaterThan(500);
    expect(d.params / 1e9).toBeGreaterThan(3);
    expect(d.params / 1e9).toBeLessThan(4);
  });
});
