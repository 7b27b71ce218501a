import { Grid, type GridThw } from '@vlmkit/config';
import { type ErnieResamplerConfig, validateResamplerConfig } from './config.js';
import { ResamplerError } from './errors.js';

export type { GridThw };

/** Host-side inputs of the resampler graph for one batch of images and videos. */
export interface ResamplerIndexInputs {
  /** Rows of the spatially merged tokens fed as the first half of each temporal pair (even frames; an image's only frame). */
  readonly firstSlice: BigInt64Array;
  /** Rows fed as the second half (odd frames; an image's frame again). Same length as firstSlice. */
  readonly secondSlice: BigInt64Array;
  /** Patches the vision tower outputs for these grids: rows of `vision_hidden` (sum of t*h*w). */
  readonly numPatches: number;
  /** Rows of `embeds`: sum over items of t'*h*w/s^2, t' = 1 for an image, t/2 for a video. */
  readonly numTokens: number;
  /** Rows of `embeds` per item, in order (the placeholder count of each image/video). */
  readonly tokensPerItem: readonly number[];
}

/**
 * The gather indices of the resampler's temporal slicing (HF `_temporal_slicing`, vLLM
 * `fwd_placeholder`), computed from the grids on the host so one graph serves any mix of images
 * and videos: each item's frames in pairs (0, 1), (2, 3), ..., an image's frame with itself.
 * A video with an odd frame count (> 1) is refused: HF silently drops the last frame and vLLM
 * fails (ERNIE's processors duplicate it). Without temporal conv both slices are empty.
 */
export function resamplerInputs(gridThw: readonly GridThw[], config: ErnieResamplerConfig): ResamplerIndexInputs {
  const { spatialMergeSize: s, temporalMergeSize, useTemporalConv } = validateResamplerConfig(config);
  const first: number[] = [];
  const second: number[] = [];
  const tokensPerItem: number[] = [];
  let numPatches = 0;
  let offset = 0; // merged-token offset of the item (HF batch_offsets)
  gridThw.forEach((thw, i) => {
    const grid = itemGrid(thw, i, s, useTemporalConv ? temporalMergeSize : 1);
    const { t, tokensPerFrame: perFrame } = grid; // HF grid_hw_after_conv
    numPatches += grid.patches;
    if (useTemporalConv) {
      const pairs: [number, number][] = t === 1 ? [[0, 0]] : Array.from({ length: t / 2 }, (_, k) => [2 * k, 2 * k + 1]);
      for (const [even, odd] of pairs) {
        for (let j = 0; j < perFrame; j++) {
          first.push(offset + even * perFrame + j);
          second.push(offset + odd * perFrame + j);
        }
      }
    }
    tokensPerItem.push(grid.tokens);
    offset += t * perFrame;
  });
  return {
    firstSlice: BigInt64Array.from(first, BigInt),
    secondSlice: BigInt64Array.from(second, BigInt),
    numPatches,
    numTokens: tokensPerItem.reduce((a, b) => a + b, 0),
    tokensPerItem,
  };
}

/**
 * The item's grid by the one grid rule (@vlmkit/config `Grid`). A single frame is an image: the
 * references pair it with itself, so it is not merged in time; a video's frames merge in pairs.
 */
function itemGrid(thw: GridThw, i: number, s: number, temporal: number): Grid {
  const fail = (message: string) => new ResamplerError('INVALID_GRID', message);
  const frame = Grid.of(thw, `grid_thw[${i}]`, { spatial: s }, fail);
  if (temporal === 1 || frame.t === 1) return frame;
  return Grid.of(thw, `grid_thw[${i}]`, { spatial: s, temporal }, (message) =>
    fail(`${message} (a video's frames are merged in pairs: duplicate the last frame as ERNIE's video processor does)`),
  );
}
