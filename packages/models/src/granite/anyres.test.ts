import { describe, expect, it } from 'vitest';
import { anyresLayout, packPlan, selectBestResolution, unpaddedRange } from './anyres.js';

// The granite-tiny fixture's config: 64x64 tiles, 8x8 patches, downsample "2/4" -> 4x4 tokens per tile.
const PINPOINTS = [
  [64, 128],
  [128, 64],
  [128, 128],
  [128, 192],
  [192, 128],
] as const;

describe('anyres', () => {
  it('picks the pinpoint HF picks (fixture notes: (70, 160) -> 128x192)', () => {
    expect(selectBestResolution([70, 160], PINPOINTS)).toEqual([128, 192]);
    expect(anyresLayout([70, 160], PINPOINTS, 64)).toEqual({ rows: 2, cols: 3, numTiles: 7 });
  });

  it('unpads the packed grid to the aspect ratio: (70, 160) on an 8x12 grid keeps rows 1..6', () => {
    // 160/70 > 12/8: scale 12/160, new height round(70 * 0.075) = 5.25 -> 5, pad (8 - 5) // 2 = 1.
    expect(unpaddedRange([70, 160], 8, 12)).toEqual({ rows: [1, 7], cols: [0, 12] });
  });

  it('packs base tokens, the unpadded grid, and a newline per row: 16 + 6 * 13 = 94 tokens (fixture anyres)', () => {
    const plan = packPlan([[70, 160]], PINPOINTS, 64, 4);
    expect(plan.tilesPerImage).toEqual([7]);
    expect(plan.tokensPerImage).toEqual([94]);
    expect(plan.indices.slice(0, 16)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    // First kept grid row is r = 1: tiles 0..2 of the first tile row, their token row 1; newline index 7 * 16 = 112.
    expect(plan.indices.slice(16, 29)).toEqual([20, 21, 22, 23, 36, 37, 38, 39, 52, 53, 54, 55, 112]);
  });
});
