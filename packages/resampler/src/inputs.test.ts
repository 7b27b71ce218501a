import { describe, expect, it } from 'vitest';
import type { ErnieResamplerConfig } from './config.js';
import { resamplerInputs } from './inputs.js';

const CFG: ErnieResamplerConfig = {
  visionHiddenSize: 4,
  textHiddenSize: 4,
  spatialMergeSize: 2,
  temporalMergeSize: 2,
  useTemporalConv: true,
  layerNormEps: 1e-6,
  rmsNormEps: 1e-5,
};

const nums = (a: BigInt64Array) => Array.from(a, Number);

describe('resamplerInputs', () => {
  // Hand derivations from HF's _temporal_slicing: n = h*w/4 merged tokens per frame,
  // item offsets are cumulative t*h*w/4; pairs are frames (0,1), (2,3), ...; an image pairs frame 0 with itself.
  it('an image [1, 2, 4]: n = 2, both slices are its two tokens', () => {
    const r = resamplerInputs([[1, 2, 4]], CFG);
    expect(nums(r.firstSlice)).toEqual([0, 1]);
    expect(nums(r.secondSlice)).toEqual([0, 1]);
    expect(r).toMatchObject({ numPatches: 8, numTokens: 2, tokensPerItem: [2] });
  });

  it('a video [4, 2, 2]: n = 1, frames 0,2 then 1,3', () => {
    const r = resamplerInputs([[4, 2, 2]], CFG);
    expect(nums(r.firstSlice)).toEqual([0, 2]);
    expect(nums(r.secondSlice)).toEqual([1, 3]);
    expect(r).toMatchObject({ numPatches: 16, numTokens: 2, tokensPerItem: [2] });
  });

  it('image, video, image: offsets 0, 2, 6', () => {
    // image [1,2,4]: rows 0-1; video [2,2,4] (n = 2): frame 0 rows 2-3, frame 1 rows 4-5; image [1,2,2]: row 6.
    const r = resamplerInputs(
      [
        [1, 2, 4],
        [2, 2, 4],
        [1, 2, 2],
      ],
      CFG,
    );
    expect(nums(r.firstSlice)).toEqual([0, 1, 2, 3, 6]);
    expect(nums(r.secondSlice)).toEqual([0, 1, 4, 5, 6]);
    expect(r).toMatchObject({ numPatches: 8 + 16 + 4, numTokens: 5, tokensPerItem: [2, 2, 1] });
  });

  it('a 6-frame video keeps the frame pairs in time order', () => {
    const r = resamplerInputs([[6, 2, 2]], CFG);
    expect(nums(r.firstSlice)).toEqual([0, 2, 4]);
    expect(nums(r.secondSlice)).toEqual([1, 3, 5]);
  });

  it('without temporal conv: no slices, every frame is a token', () => {
    const r = resamplerInputs(
      [
        [1, 2, 4],
        [4, 2, 2],
      ],
      { ...CFG, useTemporalConv: false },
    );
    expect(r.firstSlice.length).toBe(0);
    expect(r).toMatchObject({ numPatches: 24, numTokens: 6, tokensPerItem: [2, 4] });
  });

  it('an empty batch gives empty slices', () => {
    expect(resamplerInputs([], CFG)).toMatchObject({ numPatches: 0, numTokens: 0, tokensPerItem: [] });
  });

  it.each([
    [[3, 2, 2], /t a multiple of temporal_merge_size \(2\).*duplicate the last frame/],
    [[1, 3, 2], /h and w multiples of spatial_merge_size \(2\)/],
    [[1, 2, 0], /positive integers/],
    [[1, 2], /three positive integers/],
    [[1.5, 2, 2], /positive integers/],
  ])('refuses grid %j', (grid, message) => {
    expect(() => resamplerInputs([[1, 2, 2], grid as unknown as [number, number, number]], CFG)).toThrow(
      expect.objectContaining({ code: 'INVALID_GRID', message: expect.stringMatching(message) }),
    );
    expect(() => resamplerInputs([[1, 2, 2], grid as unknown as [number, number, number]], CFG)).toThrow(/grid_thw\[1\]/);
  });

  it('an odd frame count is fine without temporal conv', () => {
    expect(resamplerInputs([[3, 2, 2]], { ...CFG, useTemporalConv: false }).numTokens).toBe(3);
  });
});
