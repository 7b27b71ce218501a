import type ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { referenceConfigOf as refConfig, referenceErnieTower } from '../test-utils/ernie-reference.js';
import { type FixtureTower, loadCase, loadFixtureTower } from '../test-utils/fixtures.js';
import { relMaxError, runTower, session } from '../test-utils/ort.js';
import type { AttentionOp } from '../types.js';
import { ErnieVisionConfig } from './config.js';
import { ernieVisionInputs } from './inputs.js';
import { buildErnieVisionTowerModel } from './vision-transformer.js';

type Grid = [number, number, number];

/** The fixture cases with vision inputs: (case, modality) -> expected `<modality>_vision_hidden`. */
const CASES: { name: string; modality: 'image' | 'video' }[] = [
  { name: 'images', modality: 'image' },
  { name: 'video', modality: 'video' },
  { name: 'video-long-t', modality: 'video' },
  { name: 'batch-padded', modality: 'image' },
];

function gridsOf(flat: number[]): Grid[] {
  const out: Grid[] = [];
  for (let i = 0; i < flat.length; i += 3) out.push([flat[i]!, flat[i + 1]!, flat[i + 2]!]);
  return out;
}

async function caseInputs(name: string, modality: 'image' | 'video') {
  const t = await loadCase('ernie-tiny', name);
  const pixels = t.get(modality === 'image' ? 'pixel_values' : 'pixel_values_videos')!;
  const grids = gridsOf(t.get(`${modality}_grid_thw`)!.data as number[]);
  return { t, pixels: pixels.data as Float32Array, grids };
}

describe('ERNIE vision tower vs HF transformers 5.17 (test-fixtures/ernie-tiny, float32)', () => {
  let tower: FixtureTower;
  const sessions = new Map<AttentionOp, ort.InferenceSession>();
  beforeAll(async () => {
    tower = await loadFixtureTower('ernie-tiny');
    const config = ErnieVisionConfig.fromHfConfig(tower.config, { reference: 'hf' });
    for (const op of ['Attention', 'MultiHeadAttention'] as const) {
      sessions.set(op, await session(buildErnieVisionTowerModel(tower.weights, config, { attentionOp: op })));
    }
  });
  afterAll(async () => {
    for (const s of sessions.values()) await s.release();
    await tower.close();
  });

  for (const { name, modality } of CASES) {
    for (const op of ['Attention', 'MultiHeadAttention'] as const) {
      it(`${name}: ${modality}_vision_hidden within 1e-4 of max |ref| (${op})`, async () => {
        const config = ErnieVisionConfig.fromHfConfig(tower.config, { reference: 'hf' });
        const { t, pixels, grids } = await caseInputs(name, modality);
        const inputs = ernieVisionInputs(grids, config);
        const got = await runTower(sessions.get(op)!, pixels, 588, inputs);
        const expected = t.get(`${modality}_vision_hidden`)!;
        expect(expected.shape).toEqual([inputs.numPatches, config.hiddenSize]);
        const err = relMaxError(got, expected.data as Float32Array);
        console.log(`[vision-tower] ${name} ${op}: max|diff|/max|ref| = ${err.toExponential(2)}`);
        expect(err).toBeLessThan(1e-4);
      });
    }
  }

  it('the plain-TypeScript reference agrees with HF on `images` (validates the reference used by the other tests)', async () => {
    const config = ErnieVisionConfig.fromHfConfig(tower.config, { reference: 'hf' });
    const { t, pixels, grids } = await caseInputs('images', 'image');
    const ref = referenceErnieTower(tower.float32, refConfig(config), pixels, grids);
    expect(relMaxError(ref, t.get('image_vision_hidden')!.data as Float32Array)).toBeLessThan(1e-5);
  });
});

describe('ERNIE vision tower with a bf16 checkpoint (test-fixtures/ernie-tiny-bf16)', () => {
  it('casts bf16 weights to float32 in the graph: matches a float64 reference on the same weights (1e-5), and HF bf16 within bf16 precision', async () => {
    const tower = await loadFixtureTower('ernie-tiny-bf16');
    try {
      const config = ErnieVisionConfig.fromHfConfig(tower.config, { reference: 'hf' });
      const s = await session(buildErnieVisionTowerModel(tower.weights, config));
      const t = await loadCase('ernie-tiny', 'bf16');
      const grids = gridsOf(t.get('image_grid_thw')!.data as number[]);
      const pixels = t.get('pixel_values')!.data as Float32Array;
      const got = await runTower(s, pixels, 588, ernieVisionInputs(grids, config));
      await s.release();
      // Same weights (bf16 widened exactly), computed in float64: only float32 rounding separates them.
      const ref = referenceErnieTower(tower.float32, refConfig(config), pixels, grids);
      const errRef = relMaxError(got, ref);
      // HF ran every op in bf16 (8 significant bits): its result differs from float32 compute by a few bf16 ulps.
      const errHf = relMaxError(got, t.get('image_vision_hidden')!.data as Float32Array);
      console.log(`[vision-tower] bf16: vs float64 reference ${errRef.toExponential(2)}, vs HF bf16 ${errHf.toExponential(2)}`);
      expect(errRef).toBeLessThan(1e-5);
      expect(errHf).toBeLessThan(5e-2);
    } finally {
      await tower.close();
    }
  });
});
