import { describe, expect, it } from 'vitest';
import { VisionTowerError } from '../errors.js';
import { referencePositionIds } from '../test-utils/ernie-reference.js';
import { loadCase } from '../test-utils/fixtures.js';
import type { ErnieVisionConfig } from './config.js';
import { ernieVisionInputs } from './inputs.js';

const config = { hiddenSize: 32, numHeads: 2, spatialMergeSize: 2, ropeTheta: 10000 } as ErnieVisionConfig;

describe('ernieVisionInputs', () => {
  it('frame ids and cu_seqlens: every frame of every grid is its own sequence (hand-derived)', () => {
    // image [1, 2, 2] -> 4 patches in frame 0; video [2, 2, 4] -> frames 1 and 2 of 8 patches each.
    const x = ernieVisionInputs(
      [
        [1, 2, 2],
        [2, 2, 4],
      ],
      config,
    );
    expect(x.numPatches).toBe(20);
    expect(x.cuSeqlens).toEqual([0, 4, 12, 20]);
    expect(Array.from(x.segmentIds)).toEqual([0, 0, 0, 0, ...Array(8).fill(1), ...Array(8).fill(2)]);
    expect(x.rotaryShape).toEqual([20, 8]);
  });

  it('rotary tables: position (0, 0) gives cos 1 / sin 0; a 2x2 window is consecutive (hand-derived)', () => {
    // grid [1, 2, 4]: windows (rows 0-1, cols 0-1) then (rows 0-1, cols 2-3); patch 5 is (h 0, w 3).
    const x = ernieVisionInputs([[1, 2, 4]], config);
    expect(Array.from(x.rotaryCos.slice(0, 8))).toEqual(Array(8).fill(1));
    expect(Array.from(x.rotarySin.slice(0, 8))).toEqual(Array(8).fill(0));
    // Patch 5: h = 0 (first quarter cos 1), w = 3: frequency 0 is 1, so angle 3.
    expect(x.rotaryCos[5 * 8 + 0]).toBe(1);
    expect(x.rotaryCos[5 * 8 + 4]).toBeCloseTo(Math.cos(3), 7);
    expect(x.rotarySin[5 * 8 + 4]).toBeCloseTo(Math.sin(3), 7);
  });

  for (const [name, modality] of [
    ['images', 'image'],
    ['video', 'video'],
    ['batch-padded', 'image'],
  ] as const) {
    it(`matches HF's rotary ids and cos/sin tables on the '${name}' fixture (1e-6)`, async () => {
      const t = await loadCase('ernie-tiny', name);
      const flat = t.get(`${modality}_grid_thw`)!.data as number[];
      const grids: [number, number, number][] = [];
      for (let i = 0; i < flat.length; i += 3) grids.push([flat[i]!, flat[i + 1]!, flat[i + 2]!]);
      const x = ernieVisionInputs(grids, config);
      // HF tables are [N, headDim] = our [N, headDim/2] twice (cat(freq_hw, freq_hw)).
      const half = x.rotaryShape[1];
      for (const [ours, key] of [
        [x.rotaryCos, 'cos'],
        [x.rotarySin, 'sin'],
      ] as const) {
        const ref = t.get(`${modality}_vision_rotary_${key}`)!;
        expect(ref.shape).toEqual([x.numPatches, 2 * half]);
        let err = 0;
        for (let p = 0; p < x.numPatches; p++)
          for (let i = 0; i < 2 * half; i++)
            err = Math.max(err, Math.abs(ours[p * half + (i % half)]! - (ref.data as Float32Array)[p * 2 * half + i]!));
        expect(err).toBeLessThan(1e-6);
      }
      // The test reference's own position ids agree with HF too (validates it for the tower tests).
      expect(referencePositionIds(grids, 2).flat()).toEqual(t.get(`${modality}_vision_rotary_pos_ids`)!.data);
    });
  }

  it('rejects a grid not divisible by the merge size with INVALID_GRID', () => {
    expect(() => ernieVisionInputs([[1, 3, 4]], config)).toThrow(VisionTowerError);
    expect(() => ernieVisionInputs([[1, 3, 4]], config)).toThrow(/grid_thw\[0\] is \[1, 3, 4\].*spatial_merge_size \(2\)/);
    expect(() => ernieVisionInputs([[0, 2, 2]], config)).toThrow(/positive/);
  });
});
