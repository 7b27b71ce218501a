import { describe, expect, it } from 'vitest';
import { ERNIE_45_VL_TOKENS_HF, ernieRopeIndex } from './ernie-rope-index.js';
import { idsToArray } from './inputs.js';
import { QWEN_VL_TOKENS, qwen2VlRopeIndex, qwen3VlRopeIndex, qwen25VlRopeIndex } from './qwen-rope-index.js';
import { loadFixture, type RopeIndexFixture } from './test-utils/fixtures.js';

// Expected values: HF transformers 5.17 get_rope_index (tools/mrope/make_cases.py),
// random mixed batches with left padding. Compared exactly.

function expectMatches(
  actual: { positionIds: Int32Array | BigInt64Array; shape: number[]; mropePositionDeltas: number[] },
  c: RopeIndexFixture['cases'][number],
): void {
  expect(actual.shape).toEqual([3, c.input_ids.length, c.input_ids[0]!.length]);
  expect(idsToArray(actual.positionIds)).toEqual(c.position_ids.flat(2));
  expect(actual.mropePositionDeltas).toEqual(c.deltas);
}

describe('ernieRopeIndex vs HF 5.17', () => {
  const fx = loadFixture<RopeIndexFixture>('ernie_rope_index.json');
  it("has cases with padding and videos where t' > max(h', w')", () => {
    expect(fx.cases.length).toBeGreaterThanOrEqual(8);
    expect(fx.cases.some((c) => c.attention_mask.some((r) => r[0] === 0))).toBe(true);
    expect(fx.cases.some((c) => c.video_grid_thw.some(([t, h, w]) => t / 2 > Math.max(h, w) / 2))).toBe(true);
  });
  for (const c of fx.cases) {
    it(`${c.name}: token ids -> positions (videoTemporalAdvance 'hf')`, () => {
      const got = ernieRopeIndex(
        { inputIds: c.input_ids, attentionMask: c.attention_mask, imageGridThw: c.image_grid_thw, videoGridThw: c.video_grid_thw },
        ERNIE_45_VL_TOKENS_HF,
        { videoTemporalAdvance: 'hf' },
      );
      expectMatches(got, c);
    });
  }
  it('accepts BigInt64Array rows and mmTokenTypeIds, and returns int64', () => {
    const c = fx.cases[0]!;
    const got = ernieRopeIndex(
      {
        inputIds: c.input_ids.map((r) => BigInt64Array.from(r, BigInt)),
        attentionMask: c.attention_mask.map((r) => BigInt64Array.from(r, BigInt)),
        mmTokenTypeIds: c.mm_token_type_ids,
        imageGridThw: c.image_grid_thw,
        videoGridThw: c.video_grid_thw,
      },
      { imageTokenId: -1 },
      { videoTemporalAdvance: 'hf' },
    );
    expect(got.positionIds).toBeInstanceOf(BigInt64Array);
    expectMatches(got, c);
  });
});

describe('Qwen rope index vs HF 5.17', () => {
  const q2 = loadFixture<RopeIndexFixture>('qwen2_vl_rope_index.json');
  for (const c of q2.cases) {
    it(`${c.name}: Qwen2-VL`, () => {
      const input = {
        inputIds: c.input_ids,
        attentionMask: c.attention_mask,
        imageGridThw: c.image_grid_thw,
        videoGridThw: c.video_grid_thw,
      };
      expectMatches(qwen2VlRopeIndex(input, QWEN_VL_TOKENS, { videoTemporalAdvance: 'hf' }), c);
    });
  }
  const q25 = loadFixture<RopeIndexFixture>('qwen2_5_vl_rope_index.json');
  for (const c of q25.cases) {
    it(`${c.name}: Qwen2.5-VL (seconds ${JSON.stringify(c.second_per_grid_ts)})`, () => {
      const input = {
        inputIds: c.input_ids,
        attentionMask: c.attention_mask,
        imageGridThw: c.image_grid_thw,
        videoGridThw: c.video_grid_thw,
        secondPerGridTs: c.second_per_grid_ts!,
      };
      const config = { ...QWEN_VL_TOKENS, tokensPerSecond: c.tokens_per_second! };
      expectMatches(qwen25VlRopeIndex(input, config, { videoTemporalAdvance: 'hf', temporalScale: 'hf' }), c);
    });
  }
  const q3 = loadFixture<RopeIndexFixture>('qwen3_vl_rope_index.json');
  for (const c of q3.cases) {
    it(`${c.name}: Qwen3-VL (videos split per frame)`, () => {
      const input = {
        inputIds: c.input_ids,
        attentionMask: c.attention_mask,
        imageGridThw: c.image_grid_thw,
        videoGridThw: c.video_grid_thw,
      };
      // Frames are [1, h, w] items, so vLLM and HF advance agree: both options give HF's numbers.
      expectMatches(qwen3VlRopeIndex(input, QWEN_VL_TOKENS, { videoTemporalAdvance: 'hf' }), c);
      expectMatches(qwen3VlRopeIndex(input, QWEN_VL_TOKENS), c);
    });
  }
});
