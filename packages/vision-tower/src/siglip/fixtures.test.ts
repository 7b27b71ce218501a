import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCase } from '../test-utils/fixtures.js';
import { relMaxError, session } from '../test-utils/ort.js';
import { loadSiglipFixtureTower } from '../test-utils/siglip-fixtures.js';
import { SiglipVisionConfig, siglipNumPatches } from './config.js';
import { expectedSiglipVisionParameters } from './parameters.js';
import { buildSiglipVisionTowerModel } from './vision-transformer.js';

/** Tiles per image: the anyres grid of the best pinpoint (64-px tiles) plus the base tile (case.json best_resolution). */
const CASES: { name: string; tilesPerImage: number[] }[] = [
  { name: 'anyres', tilesPerImage: [(128 / 64) * (192 / 64) + 1] },
  { name: 'batch-2', tilesPerImage: [(192 / 64) * (128 / 64) + 1, (64 / 64) * (128 / 64) + 1] },
];

describe('SigLIP tower vs HF transformers 5.17 (test-fixtures/granite-tiny)', () => {
  let tower: Awaited<ReturnType<typeof loadSiglipFixtureTower>>;
  let config: SiglipVisionConfig;
  const sessions = new Map<string, ort.InferenceSession>();
  beforeAll(async () => {
    tower = await loadSiglipFixtureTower('granite-tiny');
    config = SiglipVisionConfig.fromHfConfig(tower.config);
    for (const op of ['Attention', 'MultiHeadAttention'] as const) {
      sessions.set(op, await session(buildSiglipVisionTowerModel(tower.weights, config, { attentionOp: op })));
    }
  });
  afterAll(async () => {
    for (const s of sessions.values()) await s.release();
    await tower.close();
  });

  for (const { name, tilesPerImage } of CASES) {
    for (const op of ['Attention', 'MultiHeadAttention'] as const) {
      it(`${name}: every vision_hidden_states level within 1e-4 of max |ref| (${op})`, async () => {
        const t = await loadCase('granite-tiny', name);
        const pv = t.get('pixel_values')!;
        const [, maxTiles, c, h, w] = pv.shape as [number, number, number, number, number];
        const tileSize = c * h * w;
        // Drop the zero padding tiles: pixel_values[i, :tiles_i], images concatenated.
        const tiles = tilesPerImage.reduce((a, b) => a + b, 0);
        const pixels = new Float32Array(tiles * tileSize);
        let at = 0;
        for (const [i, n] of tilesPerImage.entries()) {
          pixels.set((pv.data as Float32Array).subarray(i * maxTiles * tileSize, (i * maxTiles + n) * tileSize), at);
          at += n * tileSize;
        }
        const out = await sessions.get(op)!.run({ pixel_values: new ort.Tensor('float32', pixels, [tiles, c, h, w]) });
        const got = out.vision_hidden_states!;
        const ref = t.get('vision_hidden_states')!;
        const levels = config.numHiddenLayers + 1;
        const perLevel = tiles * siglipNumPatches(config) * config.hiddenSize;
        expect(got.dims).toEqual(ref.shape);
        const errs: number[] = [];
        for (let l = 0; l < levels; l++) {
          const slice = (x: Float32Array) => x.subarray(l * perLevel, (l + 1) * perLevel);
          errs.push(relMaxError(slice(got.data as Float32Array), slice(ref.data as Float32Array)));
        }
        console.log(`[vision-tower] siglip ${name} ${op}: per level ${errs.map((e) => e.toExponential(1)).join(' ')}`);
        expect(Math.max(...errs)).toBeLessThan(1e-4);
      });
    }
  }

  it('postLayerNorm adds vision_post_layernorm = LayerNorm(last hidden state) (checked against a float64 LayerNorm of the output)', async () => {
    const s = await session(buildSiglipVisionTowerModel(tower.weights, config, { postLayerNorm: true }));
    const t = await loadCase('granite-tiny', 'anyres');
    const pv = t.get('pixel_values')!;
    const out = await s.run({ pixel_values: new ort.Tensor('float32', pv.data as Float32Array, pv.shape.slice(1)) });
    await s.release();
    const d = config.hiddenSize;
    const hs = out.vision_hidden_states!.data as Float32Array;
    const last = hs.subarray(hs.length - hs.length / (config.numHiddenLayers + 1));
    const lnW = await tower.float32('post_layernorm.weight');
    const lnB = await tower.float32('post_layernorm.bias');
    const expected = new Float64Array(last.length);
    for (let r = 0; r < last.length / d; r++) {
      const row = last.subarray(r * d, (r + 1) * d);
      const mean = row.reduce((a, b) => a + b, 0) / d;
      const v = row.reduce((a, b) => a + (b - mean) ** 2, 0) / d;
      for (let i = 0; i < d; i++) expected[r * d + i] = ((row[i]! - mean) / Math.sqrt(v + config.layerNormEps)) * lnW[i]! + lnB[i]!;
    }
    expect(relMaxError(out.vision_post_layernorm!.data as Float32Array, expected)).toBeLessThan(1e-5);
  });

  it("expectedSiglipVisionParameters lists the fixture's tensors (q/k/v packed) with their shapes", () => {
    const want = expectedSiglipVisionParameters(config, { postLayerNorm: true })
      .map((p) => `${p.name} [${p.shape.join(',')}]`)
      .sort();
    const have = tower.weights
      .names()
      .map((n) => `${n} [${tower.weights.get(n).shape.join(',')}]`)
      .sort();
    expect(want).toEqual(have);
  });
});
