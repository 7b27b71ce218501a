import { describe, expect, it } from 'vitest';
import { decodePositionIds } from './decode.js';
import { ERNIE_45_VL_TOKENS, ernieRopeIndex } from './ernie-rope-index.js';
import { MropeError } from './errors.js';
import { idsToArray } from './inputs.js';
import { QWEN_VL_TOKENS, qwen25VlRopeIndex } from './qwen-rope-index.js';

const P = ERNIE_45_VL_TOKENS.imageTokenId; // 100295: vLLM uses it for image and video patches
const [IS, IE, VS, VE] = [101304, 101305, 101306, 101307];
const T = 7; // any text token

// [t0 t1 VS  P x6  VE t2 IS  P x2  IE t3], video grid [6, 2, 4], image grid [1, 4, 2].
const ids = [T, T, VS, P, P, P, P, P, P, VE, T, IS, P, P, IE, T];
const input = { inputIds: ids, videoGridThw: [[6, 2, 4]] as const, imageGridThw: [[1, 4, 2]] as const };

describe('ernieRopeIndex, vLLM get_mrope_input_positions (worked by hand)', () => {
  it("advances past a video by max(t', h', w') when t' > max(h', w')", () => {
    // Derivation from the seed (vllm_ernie45_vl.py get_mrope_input_positions):
    // text [t0 t1 VS] -> 0 1 2 on all axes; the video starts at st_idx + text_len = 3.
    // video: t' = 6 / temporal_conv 2 = 3, h' = 2/2 = 1, w' = 4/2 = 2 -> 6 tokens.
    //   np.indices((3, 1, 2)): t [0 0 1 1 2 2], h [0 0 0 0 0 0], w [0 1 0 1 0 1]; + 3.
    //   max = 5, so VE = 6, t2 = 7, IS = 8; the image starts at 9.
    // image: t' = 1, h' = 2, w' = 1: indices t [0 0], h [0 1], w [0 0]; + 9. max = 10.
    // IE = 11, t3 = 12. delta = max + 1 - len = 13 - 16 = -3.
    const r = ernieRopeIndex(input, ERNIE_45_VL_TOKENS);
    const [t, h, w] = [0, 1, 2].map((a) => idsToArray(r.positionIds.slice(a * 16, a * 16 + 16)));
    expect(t).toEqual([0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 7, 8, 9, 9, 11, 12]);
    expect(h).toEqual([0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7, 8, 9, 10, 11, 12]);
    expect(w).toEqual([0, 1, 2, 3, 4, 3, 4, 3, 4, 6, 7, 8, 9, 9, 11, 12]);
    expect(r.mropePositionDeltas).toEqual([-3]);
  });

  it("'hf' advance ignores t': the next text starts at start + max(h', w')", () => {
    // Video at 3 as above, advance max(1, 2) = 2 -> VE = 5 (equal to the video's last t),
    // t2 = 6, IS = 7, image at 8: h [8 9]; advance max(2, 1) = 2 -> IE = 10, t3 = 11.
    // The max is still the video's t = 5 < 11, so delta = 11 + 1 - 16 = -4.
    const r = ernieRopeIndex(input, ERNIE_45_VL_TOKENS, { videoTemporalAdvance: 'hf' });
    expect(idsToArray(r.positionIds.slice(0, 16))).toEqual([0, 1, 2, 3, 3, 4, 4, 5, 5, 5, 6, 7, 8, 8, 10, 11]);
    expect(idsToArray(r.positionIds.slice(16, 32))).toEqual([0, 1, 2, 3, 3, 3, 3, 3, 3, 5, 6, 7, 8, 9, 10, 11]);
    expect(r.mropePositionDeltas).toEqual([-4]);
  });

  it('left padding: positions count unmasked tokens only; padded columns get paddingPosition', () => {
    const padded = {
      ...input,
      inputIds: [
        [0, 0, ...ids],
        [T, ...ids, T],
      ],
      attentionMask: [[0, 0, ...ids.map(() => 1)], Array(18).fill(1)],
    };
    padded.videoGridThw = [
      [6, 2, 4],
      [6, 2, 4],
    ] as never;
    padded.imageGridThw = [
      [1, 4, 2],
      [1, 4, 2],
    ] as never;
    const r = ernieRopeIndex(padded, ERNIE_45_VL_TOKENS, { paddingPosition: 1, dtype: 'int64' });
    expect(r.positionIds).toBeInstanceOf(BigInt64Array);
    const row0t = idsToArray(r.positionIds.slice(0, 18));
    expect(row0t).toEqual([1, 1, 0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 7, 8, 9, 9, 11, 12]);
    expect(r.mropePositionDeltas).toEqual([-3, -3]);
    // Decoding: the next token of row 0 is its 17th real token -> 16 + (-3) = 13 on every axis.
    const next = decodePositionIds(r.mropePositionDeltas, [16, 18], 2);
    expect(idsToArray(next.positionIds)).toEqual([13, 14, 15, 16, 13, 14, 15, 16, 13, 14, 15, 16]);
  });

  it('handles adjacent items (no text between), as vLLM does', () => {
    const r = ernieRopeIndex(
      {
        inputIds: [IS, P, P, P, IE],
        imageGridThw: [
          [1, 2, 2],
          [1, 2, 4],
        ],
      },
      ERNIE_45_VL_TOKENS,
    );
    // IS 0; image 0 (1x1) at 1; image 1 (1x2) at 2: w [2 3]; IE = 4.
    expect(idsToArray(r.positionIds)).toEqual([0, 1, 2, 2, 4, 0, 1, 2, 2, 4, 0, 1, 2, 3, 4]);
  });
});

describe('input validation', () => {
  const catchErr = (f: () => unknown): MropeError => {
    try {
      f();
    } catch (e) {
      if (e instanceof MropeError) return e;
      throw e;
    }
    throw new Error('expected a MropeError');
  };

  it('a placeholder run shorter than its grid names the item and the counts', () => {
    const e = catchErr(() => ernieRopeIndex({ inputIds: [T, IS, P, P, P, IE], imageGridThw: [[1, 4, 4]] }, ERNIE_45_VL_TOKENS));
    expect(e.code).toBe('PLACEHOLDER_COUNT_MISMATCH');
    expect(e.message).toContain('image 0 (grid_thw [1, 4, 4] -> 1*2*2 = 4 tokens) needs 4 placeholder tokens');
    expect(e.message).toContain('batch 0, columns 2..4 (3 tokens)');
  });

  it('a placeholder under attention mask 0 is named where it is (batch 0), not where the grids run out (batch 1)', () => {
    // Row 0's image fully masked: HF's walk would give its grid to row 1's first run and blame row 1's second.
    const e = catchErr(() =>
      ernieRopeIndex(
        {
          inputIds: [
            [T, IS, P, IE, T, T, T],
            [IS, P, IE, IS, P, P, IE],
          ],
          attentionMask: [
            [1, 0, 0, 0, 0, 0, 0],
            [1, 1, 1, 1, 1, 1, 1],
          ],
          imageGridThw: [
            [1, 2, 2],
            [1, 2, 2],
            [1, 2, 4],
          ],
        },
        ERNIE_45_VL_TOKENS,
      ),
    );
    expect(e.code).toBe('PLACEHOLDER_COUNT_MISMATCH');
    expect(e.message).toContain('attentionMask is 0 at batch 0, column 2, on an image placeholder token; placeholders must be attended');
  });

  it('more placeholder runs than grids, and unused grids, are GRID_COUNT_MISMATCH', () => {
    const more = catchErr(() => ernieRopeIndex({ inputIds: [IS, P, IE, IS, P, IE], imageGridThw: [[1, 2, 2]] }, ERNIE_45_VL_TOKENS));
    expect(more.code).toBe('GRID_COUNT_MISMATCH');
    expect(more.message).toContain('need image 1, but only 1 image grid(s) were given');
    const fewer = catchErr(() =>
      ernieRopeIndex(
        {
          inputIds: [IS, P, IE],
          imageGridThw: [
            [1, 2, 2],
            [1, 2, 2],
          ],
        },
        ERNIE_45_VL_TOKENS,
      ),
    );
    expect(fewer.code).toBe('GRID_COUNT_MISMATCH');
    expect(fewer.message).toContain('2 image grid(s) were given but the tokens hold image placeholders for only 1');
  });

  it('shared patch id without a start token is ambiguous; bad grids and shapes are rejected', () => {
    expect(catchErr(() => ernieRopeIndex({ inputIds: [P], imageGridThw: [[1, 2, 2]] }, { imageTokenId: P })).code).toBe(
      'AMBIGUOUS_PATCH_TOKEN',
    );
    const odd = catchErr(() => ernieRopeIndex({ inputIds: [VS, P, VE], videoGridThw: [[3, 2, 2]] }, ERNIE_45_VL_TOKENS));
    expect([odd.code, odd.message]).toEqual([
      'INVALID_GRID',
      'videoGridThw[0] is [3, 2, 2]: expected t a multiple of temporal_merge_size (2), h and w of spatial_merge_size (2)',
    ]);
    expect(catchErr(() => ernieRopeIndex({ inputIds: [[T, T], [T]] }, ERNIE_45_VL_TOKENS)).code).toBe('SHAPE_MISMATCH');
  });

  it('pure text is ordinary 1D positions with delta 0', () => {
    const r = ernieRopeIndex({ inputIds: new Int32Array([5, 6, 7]) }, ERNIE_45_VL_TOKENS);
    expect(idsToArray(r.positionIds)).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2]);
    expect(r.mropePositionDeltas).toEqual([0]);
  });
});

describe('qwen25VlRopeIndex temporal scale', () => {
  const V = QWEN_VL_TOKENS.videoTokenId;
  const q = { inputIds: [T, V, V, V, T], videoGridThw: [[3, 2, 2]] as const, secondPerGridTs: [0.5] };
  const cfg = { ...QWEN_VL_TOKENS, tokensPerSecond: 2 };
  it("'vllm': floor(k * 0.5 s * 2) = k; 'hf': k * 2 * int(0.5) = 0", () => {
    // Video at 1, three frames of 1x1. vLLM t = 1 + [0 1 2], next text at max + 1 = 4.
    expect(idsToArray(qwen25VlRopeIndex(q, cfg).positionIds.slice(0, 5))).toEqual([0, 1, 2, 3, 4]);
    // HF 5.17: t = 1 + [0 0 0], next text at 1 + max(1, 1) = 2.
    expect(idsToArray(qwen25VlRopeIndex(q, cfg, { temporalScale: 'hf', videoTemporalAdvance: 'hf' }).positionIds.slice(0, 5))).toEqual([
      0, 1, 1, 1, 2,
    ]);
  });
});
