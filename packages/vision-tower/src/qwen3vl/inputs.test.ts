import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { VisionTowerError } from '../errors.js';
import { FIXTURES } from '../test-utils/fixtures.js';
import { Qwen3VlVisionConfig } from './config.js';
import { positionInterpolation, qwen3VlVisionInputs } from './inputs.js';

type Grid = [number, number, number];
interface HfTaps {
  side: number;
  grids: Grid[];
  indices: number[];
  weights: number[];
}
/** HF 5.17's get_vision_interpolation_indices_and_weights (tools/fixtures/qwen3vl_vision_interpolation.py). */
const HF = JSON.parse(readFileSync(join(FIXTURES, 'vision-tower', 'qwen3vl_interpolation.json'), 'utf8')) as {
  spatial_merge_size: number;
  cases: HfTaps[];
};

describe('positionInterpolation', () => {
  for (const { side, grids, indices, weights } of HF.cases) {
    it(`side ${side}, grids ${JSON.stringify(grids)}: indices and float32 weights bit-equal to HF 5.17`, () => {
      const got = positionInterpolation(grids, { positionGridSide: side, spatialMergeSize: HF.spatial_merge_size });
      expect(got.posShape).toEqual([indices.length / 4, 4]);
      expect(Array.from(got.posIndices)).toEqual(indices);
      expect(Array.from(got.posWeights)).toEqual(weights);
    });
  }

  it('corners map to the corners of the learned grid with weight 1 (hand-derived, align_corners=True)', () => {
    // grid [1, 2, 2] on a 48-side table: one window, patches (0,0) (0,1) (1,0) (1,1) = table corners 0, 47, 2256, 2303.
    const { posIndices, posWeights } = positionInterpolation([[1, 2, 2]], { positionGridSide: 48, spatialMergeSize: 2 });
    const firstTap = [0, 1, 2, 3].map((p) => posIndices[p * 4]!);
    expect(firstTap).toEqual([0, 47, 47 * 48, 48 * 48 - 1]);
    for (let p = 0; p < 4; p++) expect(posWeights.slice(p * 4, p * 4 + 4).reduce((a, b) => a + b, 0)).toBe(1);
  });

  it('repeats one frame per temporal patch', () => {
    const { posIndices, posWeights } = positionInterpolation([[3, 4, 6]], { positionGridSide: 6, spatialMergeSize: 2 });
    const frame = 4 * 6 * 4;
    for (let f = 1; f < 3; f++) {
      expect(posIndices.slice(f * frame, (f + 1) * frame)).toEqual(posIndices.slice(0, frame));
      expect(posWeights.slice(f * frame, (f + 1) * frame)).toEqual(posWeights.slice(0, frame));
    }
  });
});

describe('qwen3VlVisionInputs', () => {
  const config = Qwen3VlVisionConfig.fromHfConfig({
    hidden_size: 32,
    num_heads: 2,
    depth: 3,
    num_position_embeddings: 36,
    deepstack_visual_indexes: [0, 1],
  });

  it('rotary tables and frame ids as ERNIE (each temporal patch its own sequence), plus the taps', () => {
    const x = qwen3VlVisionInputs(
      [
        [1, 4, 6],
        [2, 4, 4],
      ],
      config,
    );
    expect(x.numPatches).toBe(24 + 32);
    expect(x.cuSeqlens).toEqual([0, 24, 40, 56]);
    expect(x.rotaryShape).toEqual([56, 8]);
    expect(x.posShape).toEqual([56, 4]);
  });

  it('rejects a grid not divisible by the merge size with INVALID_GRID', () => {
    const call = () => qwen3VlVisionInputs([[1, 3, 4]], config);
    expect(call).toThrow(VisionTowerError);
    expect(call).toThrow(/grid_thw\[0\] is \[1, 3, 4\]/);
  });
});
