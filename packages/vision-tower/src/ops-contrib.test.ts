// Both towers after onnx-graph's CONTRIB_PASSES (each residual add + LayerNorm one com.microsoft SkipLayerNormalization):
// the ERNIE tower against the plain-TypeScript reference on random weights, SigLIP against HF on the granite-tiny
// fixture, each with the node counts that show the fusion happened.
import { applyPasses, CONTRIB_PASSES, type Graph } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErnieVisionConfig } from './ernie/config.js';
import { ernieVisionInputs } from './ernie/inputs.js';
import { expectedErnieVisionParameters } from './ernie/parameters.js';
import { buildErnieVisionTowerModel } from './ernie/vision-transformer.js';
import { SiglipVisionConfig } from './siglip/config.js';
import { buildSiglipVisionTowerModel } from './siglip/vision-transformer.js';
import { referenceConfigOf, referenceErnieTower } from './test-utils/ernie-reference.js';
import { loadCase } from './test-utils/fixtures.js';
import { randn, relMaxError, runTower, session } from './test-utils/ort.js';
import { randomWeights } from './test-utils/random-weights.js';
import { loadSiglipFixtureTower } from './test-utils/siglip-fixtures.js';

const count = (g: Graph, op: string) => g.snapshot().nodes.filter((n) => n.opType === op).length;

/** `g` after CONTRIB_PASSES, with the skip-layer-norm rewrites they made. */
function fused(g: Graph): { g: Graph; skipLayerNorms: number } {
  return { g, skipLayerNorms: applyPasses(g, CONTRIB_PASSES)['skip-layer-norm']! };
}

describe('vision towers after CONTRIB_PASSES', () => {
  it('ERNIE, 3 blocks, 3 grids / 4 frames: within 1e-5 of the reference; 2 LayerNorms per block fused with their adds', async () => {
    const config = ErnieVisionConfig.fromHfConfig({
      vision_config: { depth: 3, embed_dim: 16, hidden_size: 16, num_heads: 2, mlp_ratio: 3, patch_size: 2, in_channels: 3 },
    });
    const { weights, float32 } = randomWeights(expectedErnieVisionParameters(config), 5);
    const grids: [number, number, number][] = [
      [1, 2, 4],
      [2, 4, 2],
      [1, 2, 2],
    ];
    const inputs = ernieVisionInputs(grids, config);
    const patchDim = config.inChannels * config.patchSize ** 2;
    const pixels = randn(inputs.numPatches * patchDim, 9);
    const onnx = buildErnieVisionTowerModel(weights, config);
    const { g, skipLayerNorms } = fused(buildErnieVisionTowerModel(weights, config));
    // norm1 of block 0 has no residual before it; every other norm (norm2s, later norm1s, the final ln) is fused.
    expect([count(onnx, 'LayerNormalization'), count(onnx, 'SkipLayerNormalization')]).toEqual([2 * 3 + 1, 0]);
    expect([count(g, 'LayerNormalization'), count(g, 'SkipLayerNormalization'), skipLayerNorms]).toEqual([1, 2 * 3, 2 * 3]);
    const s = await session(g);
    try {
      const got = await runTower(s, pixels, patchDim, inputs);
      expect(relMaxError(got, referenceErnieTower(float32, referenceConfigOf(config), pixels, grids))).toBeLessThan(1e-5);
    } finally {
      await s.release();
    }
  });

  describe('SigLIP on test-fixtures/granite-tiny (anyres)', () => {
    let tower: Awaited<ReturnType<typeof loadSiglipFixtureTower>>;
    let config: SiglipVisionConfig;
    beforeAll(async () => {
      tower = await loadSiglipFixtureTower('granite-tiny');
      config = SiglipVisionConfig.fromHfConfig(tower.config);
    });
    afterAll(async () => {
      await tower.close();
    });

    it('every hidden state within 1e-4 of HF (as the standard graph); the adds fused with the next LayerNorm', async () => {
      const L = config.numHiddenLayers;
      const { g, skipLayerNorms } = fused(buildSiglipVisionTowerModel(tower.weights, config, { postLayerNorm: true }));
      // 2L + 1 norms with post_layernorm: layer 0's layer_norm1 alone stays a LayerNormalization.
      expect([count(g, 'LayerNormalization'), count(g, 'SkipLayerNormalization'), skipLayerNorms]).toEqual([1, 2 * L, 2 * L]);
      const t = await loadCase('granite-tiny', 'anyres');
      const pv = t.get('pixel_values')!;
      const s = await session(g);
      const out = await s.run({ pixel_values: new ort.Tensor('float32', pv.data as Float32Array, pv.shape.slice(1)) });
      await s.release();
      // The case's first image fills every tile (no padding tiles), so all rows compare.
      const got = out.vision_hidden_states!.data as Float32Array;
      const ref = t.get('vision_hidden_states')!.data as Float32Array;
      const perLevel = got.length / (L + 1);
      const errs = Array.from({ length: L + 1 }, (_, l) =>
        relMaxError(got.subarray(l * perLevel, (l + 1) * perLevel), ref.subarray(l * perLevel, (l + 1) * perLevel)),
      );
      console.log(`[vision-tower] siglip anyres contrib: per level ${errs.map((e) => e.toExponential(1)).join(' ')}`);
      expect(Math.max(...errs)).toBeLessThan(1e-4);
    });
  });
});
