import { contract } from '@vlmkit/onnx-graph';
import { bool, float32, type HostTensor, hostTensor, int64 } from '@vlmkit/runtime';
import { describe, expect, it } from 'vitest';
import { ModelError } from './errors.js';
import {
  attentionMask,
  checkNamedInputs,
  INPUT_IDS,
  intRows,
  PER_TOKEN,
  perToken,
  pixelsFor,
  tokenIds,
  tokenTypes,
} from './inputs-check.js';

/** A model's contract of HF-named inputs, as the models declare theirs. */
const M = contract({ input_ids: INPUT_IDS, attention_mask: PER_TOKEN, position_ids: PER_TOKEN, mm_token_type_ids: PER_TOKEN });
const ids = (b: number, s: number) => int64(new Array<number>(b * s).fill(1), [b, s]);

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

  it('per-token inputs: int64 with the shape of input_ids (not only its size), named in the error (the contract)', () => {
    const check =
      (t: HostTensor, name = 'attention_mask') =>
      () =>
        checkNamedInputs(M, { input_ids: ids(1, 2), [name]: t }, 'M');
    expect(check(int64([1, 1], [1, 2]))).not.toThrow();
    expect(Array.from(perToken(int64([1, 1], [1, 2]))!)).toEqual([1n, 1n]);
    expect(perToken(undefined)).toBeUndefined();
    expect(error(check(bool([true, true], [1, 2]))).message).toBe(
      'attention_mask must be int64 [1, 2] (the shape of input_ids), got bool [1, 2]',
    );
    expect(error(check(float32([1, 1], [1, 2]))).message).toBe(
      'attention_mask must be int64 [1, 2] (the shape of input_ids), got float32 [1, 2]',
    );
    expect(error(check(int64([0, 1, 2], [1, 3]), 'position_ids')).message).toBe(
      'position_ids must be int64 [1, 2] (the shape of input_ids), got int64 [1, 3]',
    );
    // Same size, other shape: [2, 1] is not [1, 2].
    expect(error(check(int64([0, 1], [2, 1]), 'position_ids')).message).toBe(
      'position_ids must be int64 [1, 2] (the shape of input_ids), got int64 [2, 1]',
    );
  });

  it('attention_mask: values 0 or 1, at least one 1 per row', () => {
    expect(Array.from(attentionMask(int64([0, 1, 1, 1], [2, 2]), 2, 2)!)).toEqual([0n, 1n, 1n, 1n]);
    expect(error(() => attentionMask(int64([1, 2], [1, 2]), 1, 2)).message).toBe(
      'attention_mask[0, 1] is 2: mask values must be 0 (padding) or 1',
    );
    expect(error(() => attentionMask(int64([1, 1, 0, 0], [2, 2]), 2, 2)).message).toBe(
      'attention_mask[1] is all 0: each row needs at least one attended token (1)',
    );
  });

  it('token types: shape of input_ids and allowed values, named (short tensors too)', () => {
    for (const name of ['mm_token_type_ids', 'moe_mm_token_type_ids']) {
      expect(error(() => checkNamedInputs(M, { input_ids: ids(1, 3), mm_token_type_ids: int64([0], [1, 1]) }, 'M')).message).toBe(
        'mm_token_type_ids must be int64 [1, 3] (the shape of input_ids), got int64 [1, 1]',
      );
      expect(error(() => tokenTypes(int64([0, 3, 0], [1, 3]), name, 3, [0, 1, 2])).message).toBe(
        `${name}[0, 1] is 3: expected one of 0, 1, 2`,
      );
    }
  });

  it('input names: anything a model does not read is refused by name (the contract)', () => {
    expect(() => checkNamedInputs(M, { input_ids: ids(1, 1), attention_mask: undefined }, 'M')).not.toThrow();
    expect(error(() => checkNamedInputs(M, { input_ids: ids(1, 1), token_type_ids: ids(1, 1) }, 'M')).message).toBe(
      'M does not read an input named token_type_ids: expected some of input_ids, attention_mask, position_ids, mm_token_type_ids',
    );
  });

  it('grids and image sizes: int64 [N, width] rows of sizes >= 1', () => {
    expect(intRows(undefined, 'image_grid_thw', ['t', 'h', 'w'])).toEqual([]);
    expect(intRows(int64([1, 4, 6, 1, 6, 4], [2, 3]), 'image_grid_thw', ['t', 'h', 'w'])).toEqual([
      [1, 4, 6],
      [1, 6, 4],
    ]);
    const hw = ['height', 'width'];
    expect(error(() => intRows(int64([1, 4, 6], [1, 3]), 'image_sizes', hw)).message).toBe(
      'image_sizes must be int64 [N, 2] (height, width), got [1, 3]',
    );
    expect(error(() => intRows(float32([1, 2], [1, 2]), 'image_sizes', hw)).message).toBe('image_sizes must be int64, got float32');
    expect(error(() => intRows(int64([5, 5, 0, 0], [2, 2]), 'image_sizes', hw)).message).toBe(
      'image_sizes[1] is [0, 0]: each of (height, width) must be at least 1',
    );
    expect(error(() => intRows(int64([1, -4, 6], [1, 3]), 'image_grid_thw', ['t', 'h', 'w'])).message).toBe(
      'image_grid_thw[0] is [1, -4, 6]: each of (t, h, w) must be at least 1',
    );
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
