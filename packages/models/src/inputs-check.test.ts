import { bool, float32, hostTensor, int64 } from '@vlmkit/runtime';
import { describe, expect, it } from 'vitest';
import { ModelError } from './errors.js';
import { intRows, perToken, pixelsFor, tokenIds } from './inputs-check.js';

function error(f: () => unknown): ModelError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ModelError);
    return e as ModelError;
  }
  throw new Error('no error thrown');
}

describe('input checks shared by ERNIE and Granite', () => {
  it('input_ids: int64 [B, S]', () => {
    expect(tokenIds(int64([1, 2, 3, 4, 5, 6], [2, 3]), 10)).toEqual({
      data: BigInt64Array.from([1n, 2n, 3n, 4n, 5n, 6n]),
      batch: 2,
      seq: 3,
    });
    const e = error(() => tokenIds(hostTensor('int32', Int32Array.from([1, 2]), [1, 2]), 10));
    expect(e.code).toBe('BAD_INPUT');
    expect(e.message).toBe('input_ids must be int64 [B, S], got int32 [1, 2]');
    expect(error(() => tokenIds(int64([1, 2], [2]), 10)).message).toBe('input_ids must be int64 [B, S], got int64 [2]');
  });

  it('input_ids: every id in [0, vocab_size): negative ids (which Gather would wrap) and ids past the table are refused by position', () => {
    expect(error(() => tokenIds(int64([1, 2, 3, -5], [2, 2]), 10)).message).toBe(
      "input_ids[1, 1] is -5: token ids must be in [0, 10) (the model's vocab_size)",
    );
    expect(error(() => tokenIds(int64([10, 0], [1, 2]), 10)).message).toBe(
      "input_ids[0, 0] is 10: token ids must be in [0, 10) (the model's vocab_size)",
    );
    expect(tokenIds(int64([0, 9], [1, 2]), 10).data).toEqual(BigInt64Array.from([0n, 9n]));
  });

  it('input_ids missing or empty: named, not a TypeError or an ORT Reshape message', () => {
    expect(error(() => tokenIds(undefined, 10)).message).toBe('input_ids is missing: the token ids of the prompt, int64 [B, S]');
    expect(error(() => tokenIds(int64([], [1, 0]), 10)).message).toBe('input_ids must hold at least one token per row, got [1, 0]');
    expect(error(() => tokenIds(int64([], [0, 3]), 10)).message).toBe('input_ids must hold at least one token per row, got [0, 3]');
  });

  it('per-token inputs: int64 with the shape of input_ids, named in the error', () => {
    expect(perToken(undefined, 'attention_mask', 1, 2)).toBeUndefined();
    expect(Array.from(perToken(int64([1, 1], [1, 2]), 'attention_mask', 1, 2)!)).toEqual([1n, 1n]);
    expect(error(() => perToken(bool([true, true], [1, 2]), 'attention_mask', 1, 2)).message).toBe(
      'attention_mask must be int64, got bool',
    );
    expect(error(() => perToken(int64([0, 1, 2], [1, 3]), 'position_ids', 1, 2)).message).toBe(
      'position_ids must have the shape of input_ids [1, 2], got [1, 3]',
    );
  });

  it('grids and image sizes: int64 [N, width] rows', () => {
    expect(intRows(undefined, 'image_grid_thw', 3)).toEqual([]);
    expect(intRows(int64([1, 4, 6, 1, 6, 4], [2, 3]), 'image_grid_thw', 3)).toEqual([
      [1, 4, 6],
      [1, 6, 4],
    ]);
    expect(error(() => intRows(int64([1, 4, 6], [1, 3]), 'image_sizes', 2)).message).toBe('image_sizes must be [N, 2], got [1, 3]');
    expect(error(() => intRows(float32([1, 2], [1, 2]), 'image_sizes', 2)).message).toBe('image_sizes must be int64, got float32');
  });

  it('pixel values: present when grids or sizes ask for them, float32', () => {
    const pv = float32([0.5, 1], [1, 2]);
    expect(pixelsFor(pv, 'pixel_values', 'image_sizes')).toBe(pv);
    expect(error(() => pixelsFor(undefined, 'pixel_values_videos', 'video_grid_thw')).message).toBe(
      'video_grid_thw is given but pixel_values_videos is missing',
    );
    expect(error(() => pixelsFor(int64([1], [1, 1]), 'pixel_values', 'image_sizes')).message).toBe(
      'pixel_values must be float32, got int64',
    );
  });
});
