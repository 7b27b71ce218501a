import { Graph } from '@vlmkit/onnx-graph';
import { QWEN3_VL_RENAMES } from '@vlmkit/weight-mapper';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FixtureTower, loadCase, loadFixtureTower } from '../test-utils/fixtures.js';
import { relMaxError, session } from '../test-utils/ort.js';
import { type Grid, gridsOf, runQwen3VlTower } from '../test-utils/qwen3vl.js';
import type { AttentionOp } from '../types.js';
import { Qwen3VlVisionConfig, qwen3VlPatchDim } from './config.js';
import { patchEmbed, positionEmbedding } from './embeddings.js';
import { qwen3VlVisionInputs } from './inputs.js';
import { expectedQwen3VlVisionParameters } from './parameters.js';
import { buildQwen3VlVisionTowerModel } from './vision-transformer.js';

type Case = Awaited<ReturnType<typeof loadCase>>;
const CHECKPOINTS = ['qwen3-vl-tiny', 'qwen3-vl-moe-tiny'];
/** The cases' modality: `<m>_embeds` and `deepstack_<j>` are its features (one modality per case). */
const CASES: { name: string; modality: 'image' | 'video' }[] = [
  { name: 'image', modality: 'image' },
  { name: 'two-images', modality: 'image' },
  { name: 'video', modality: 'video' },
  { name: 'batch-padded', modality: 'image' },
];

function inputsOf(t: Case, modality: 'image' | 'video'): { pixels: Float32Array; grids: Grid[] } {
  const pixels = t.get(modality === 'image' ? 'pixel_values' : 'pixel_values_videos')!.data as Float32Array;
  return { pixels, grids: gridsOf(t.get(`${modality}_grid_thw`)!.data as number[]) };
}

const ref = (t: Case, name: string) => t.get(name)!.data as Float32Array;

for (const checkpoint of CHECKPOINTS) {
  describe(`Qwen3-VL vision tower vs HF transformers 5.17 (test-fixtures/${checkpoint}, float32)`, () => {
    let tower: FixtureTower;
    let config: Qwen3VlVisionConfig;
    const sessions = new Map<AttentionOp, ort.InferenceSession>();
    beforeAll(async () => {
      tower = await loadFixtureTower(checkpoint, QWEN3_VL_RENAMES);
      config = Qwen3VlVisionConfig.fromHfConfig(tower.config);
      for (const op of ['Attention', 'MultiHeadAttention'] as const) {
        sessions.set(op, await session(buildQwen3VlVisionTowerModel(tower.weights, config, { attentionOp: op })));
      }
    });
    afterAll(async () => {
      for (const s of sessions.values()) await s.release();
      await tower.close();
    });

    for (const { name, modality } of CASES) {
      for (const op of ['Attention', 'MultiHeadAttention'] as const) {
        it(`${name}: ${modality}_embeds and every deepstack_<j> within 1e-5 of max |ref| (${op})`, async () => {
          const t = await loadCase(checkpoint, name);
          const { pixels, grids } = inputsOf(t, modality);
          const out = await runQwen3VlTower(sessions.get(op)!, config, pixels, grids);
          const pairs: [string, string][] = [[`${modality}_embeds`, 'vision_embeds']];
          for (let j = 0; j < config.deepstackVisualIndexes.length; j++) pairs.push([`deepstack_${j}`, `deepstack_${j}`]);
          const errs = pairs.map(([hf, ours]) => {
            expect(out[ours]!.length).toBe(t.get(hf)!.data.length);
            return relMaxError(out[ours]!, ref(t, hf));
          });
          console.log(
            `[vision-tower] qwen3vl ${checkpoint} ${name} ${op}: ${pairs.map(([hf], i) => `${hf} ${errs[i]!.toExponential(1)}`).join(', ')}`,
          );
          expect(Math.max(...errs)).toBeLessThan(1e-5);
        });
      }

      it(`${name}: patch_embed (5e-6: a C*T*p*p-term sum in another order) and pos_embed (1e-6) as HF's; rotary tables as HF's`, async () => {
        const t = await loadCase(checkpoint, name);
        const { pixels, grids } = inputsOf(t, modality);
        const x = qwen3VlVisionInputs(grids, config);
        const g = new Graph();
        const pv = g.input('pv', 'float32', ['n', qwen3VlPatchDim(config)]);
        const pi = g.input('pi', 'int32', ['n', 4]);
        const pw = g.input('pw', 'float32', ['n', 4]);
        g.output(patchEmbed(g, tower.weights.sub('patch_embed'), config, pv), 'patch_embed');
        g.output(positionEmbedding(g, tower.weights, config, pi, pw), 'pos_embed');
        const s = await session(g);
        const out = await s.run({
          pv: new ort.Tensor('float32', pixels, [x.numPatches, qwen3VlPatchDim(config)]),
          pi: new ort.Tensor('int32', x.posIndices, x.posShape),
          pw: new ort.Tensor('float32', x.posWeights, x.posShape),
        });
        await s.release();
        const hfPatch = ref(t, `${modality}_vision_patch_embed`);
        const hfEmbeddings = ref(t, `${modality}_vision_embeddings`);
        const errPatch = relMaxError(out.patch_embed!.data as Float32Array, hfPatch);
        // HF's embeddings are patch_embed + pos_embed: ours added to HF's patch_embed (in float64) must give them.
        const pos = out.pos_embed!.data as Float32Array;
        const errPos = relMaxError(
          Float64Array.from(pos, (v, i) => v + hfPatch[i]!),
          hfEmbeddings,
        );
        console.log(
          `[vision-tower] qwen3vl ${checkpoint} ${name}: patch_embed ${errPatch.toExponential(1)}, pos_embed ${errPos.toExponential(1)}`,
        );
        expect(errPatch).toBeLessThan(5e-6);
        expect(errPos).toBeLessThan(1e-6);
        // HF's tables are [N, headDim]: ours [N, headDim/2] written twice (neox halves).
        const half = x.rotaryShape[1];
        for (const [ours, hf] of [
          [x.rotaryCos, ref(t, `${modality}_vision_rotary_cos`)],
          [x.rotarySin, ref(t, `${modality}_vision_rotary_sin`)],
        ] as const) {
          const full = new Float32Array(hf.length);
          for (let p = 0; p < x.numPatches; p++) {
            full.set(ours.subarray(p * half, (p + 1) * half), p * 2 * half);
            full.set(ours.subarray(p * half, (p + 1) * half), p * 2 * half + half);
          }
          expect(relMaxError(full, hf)).toBeLessThan(1e-6);
        }
      });
    }

    it('attention is block-diagonal per image and per temporal patch: one segment per grid instead misses HF by > 1e-3', async () => {
      for (const [name, modality] of [
        ['two-images', 'image'],
        ['video', 'video'],
      ] as const) {
        const t = await loadCase(checkpoint, name);
        const { pixels, grids } = inputsOf(t, modality);
        // two-images: both images one sequence; video: its 2 temporal patches one sequence.
        const x = qwen3VlVisionInputs(grids, config);
        expect(x.cuSeqlens.length).toBe(3);
        const merged = new Int32Array(x.numPatches);
        const s = sessions.get('MultiHeadAttention')!;
        const out = await s.run({
          pixel_values: new ort.Tensor('float32', pixels, [x.numPatches, qwen3VlPatchDim(config)]),
          pos_indices: new ort.Tensor('int32', x.posIndices, x.posShape),
          pos_weights: new ort.Tensor('float32', x.posWeights, x.posShape),
          rotary_cos: new ort.Tensor('float32', x.rotaryCos, x.rotaryShape),
          rotary_sin: new ort.Tensor('float32', x.rotarySin, x.rotaryShape),
          segment_ids: new ort.Tensor('int32', merged, [x.numPatches]),
        });
        expect(relMaxError(out.vision_embeds!.data as Float32Array, ref(t, `${modality}_embeds`))).toBeGreaterThan(1e-3);
      }
    });

    it("expectedQwen3VlVisionParameters lists exactly the checkpoint's model.visual.* tensors (the mapper's renames applied) with their shapes", () => {
      const want = expectedQwen3VlVisionParameters(config)
        .map((p) => `${p.name} [${p.shape.join(',')}]`)
        .sort();
      const have = tower.weights
        .names()
        .map((n) => `${n} [${tower.weights.get(n).shape.join(',')}]`)
        .sort();
      expect(want).toEqual(have);
    });
  });
}
