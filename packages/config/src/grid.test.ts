import { describe, expect, it } from 'vitest';
import { Grid, GridError } from './index.js';

/** The error `Grid.of` threw (fails the test when it threw nothing). */
function refusal(read: () => unknown): Error {
  try {
    read();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected the grid to be refused');
}

describe('Grid', () => {
  it('patches and tokens: an image merges 2x2 patches, a video also 2 frames', () => {
    const image = Grid.of([1, 28, 44], 'image_grid_thw[0]', { spatial: 2 });
    expect([image.patches, image.tokens, image.tokensPerFrame]).toEqual([1232, 308, 308]);
    expect(image.merged).toEqual([1, 14, 22]);
    const video = Grid.of([4, 16, 16], 'video_grid_thw[0]', { spatial: 2, temporal: 2 });
    expect([video.patches, video.tokens, video.tokensPerFrame]).toEqual([1024, 128, 64]);
    expect(video.merged).toEqual([2, 8, 8]);
    expect(video.thw).toEqual([4, 16, 16]);
    // Without a temporal merge every frame is its own tokens.
    expect(Grid.of([3, 2, 4], 'g', { spatial: 2 }).tokens).toBe(6);
  });

  it.each([
    [[1, 3, 4], { spatial: 2 }, 'image_grid_thw[1] is [1, 3, 4]: expected h and w multiples of spatial_merge_size (2)'],
    [
      [3, 4, 4],
      { spatial: 2, temporal: 2 },
      'image_grid_thw[1] is [3, 4, 4]: expected t a multiple of temporal_merge_size (2), h and w of spatial_merge_size (2)',
    ],
    [[1, 0, 4], { spatial: 2 }, 'image_grid_thw[1] is [1,0,4]: expected three positive integers [t, h, w]'],
    [[1, 2], { spatial: 1 }, 'image_grid_thw[1] is [1,2]: expected three positive integers [t, h, w]'],
    [[1.5, 2, 2], { spatial: 1 }, 'image_grid_thw[1] is [1.5,2,2]: expected three positive integers [t, h, w]'],
    ['1,2,2', { spatial: 1 }, 'image_grid_thw[1] is "1,2,2": expected three positive integers [t, h, w]'],
  ])('refuses %j (merge %j), naming the input', (thw, merge, message) => {
    const e = refusal(() => Grid.of(thw, 'image_grid_thw[1]', merge));
    expect(e).toBeInstanceOf(GridError);
    expect(e).toMatchObject({ code: 'INVALID_GRID', input: 'image_grid_thw[1]', message });
  });

  it("a caller's own error type carries the message", () => {
    class MyError extends Error {}
    const e = refusal(() => Grid.of([1, 3, 3], 'grids[0]', { spatial: 2 }, (m) => new MyError(`${m}; fix it`)));
    expect(e).toBeInstanceOf(MyError);
    expect(e.message).toBe('grids[0] is [1, 3, 3]: expected h and w multiples of spatial_merge_size (2); fix it');
  });
});
