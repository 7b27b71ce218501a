import { expect, it } from 'vitest';
// The README's example, verbatim apart from the import path.
import {
  decodePositionIds,
  ERNIE_45_VL_TOKENS,
  ernieRopeIndex,
  ernieTextRotaryCosSin,
  idsToArray,
  visionRotaryCosSin,
  visionRotaryPositionIds,
} from './index.js';

it('README example runs and gives the documented numbers', () => {
  // "Describe <image>": 2 text tokens, <img_start>, 4 patch tokens (grid [1, 4, 4] after 2x2 merge), <img_end>, 1 text token.
  const P = ERNIE_45_VL_TOKENS.imageTokenId;
  const inputIds = [[11, 12, 101304, P, P, P, P, 101305, 13]];
  const pos = ernieRopeIndex({ inputIds, imageGridThw: [[1, 4, 4]] }, ERNIE_45_VL_TOKENS);
  // pos.shape [3, 1, 9]; h axis: text 0 1 2, patches 3 3 4 4, then 5 6
  expect(idsToArray(pos.positionIds).slice(9, 18)).toEqual([0, 1, 2, 3, 3, 4, 4, 5, 6]);
  expect(pos.mropePositionDeltas).toEqual([-2]);

  // Decoder rotary tables for those positions: [1, 9, 64], GPT-J pairs.
  const { cos, sin, shape } = ernieTextRotaryCosSin(pos, { headDim: 128, ropeTheta: 500000, freqAllocation: 20 });
  expect(shape).toEqual([1, 9, 64]);
  expect(cos.length).toBe(sin.length);

  // The next generated token (the 10th real token) sits at 9 + delta = 7 on all axes.
  const next = decodePositionIds(pos.mropePositionDeltas, 9);
  expect(idsToArray(next.positionIds)).toEqual([7, 7, 7]);

  // Vision tower: (h, w) ids for the 16 patches, in 2x2-window order, and their tables [16, 40].
  const ids = visionRotaryPositionIds([[1, 4, 4]], 2);
  const vis = visionRotaryCosSin(ids, { headDim: 80 });
  expect(Array.from(ids.positionIds.slice(0, 8))).toEqual([0, 0, 0, 1, 1, 0, 1, 1]);
  expect(vis.shape).toEqual([16, 40]);
});
