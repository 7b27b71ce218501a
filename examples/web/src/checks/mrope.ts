import { ERNIE_45_VL_TOKENS_HF, ernieRopeIndex, idsToArray, QWEN_VL_TOKENS, qwen3VlRopeIndex } from '@vlmkit/mrope';

/** The HF rope-index fixture files (test-fixtures/mrope) the check runs, with the function for each. */
export const MROPE_FIXTURES = ['ernie_rope_index.json', 'qwen3_vl_rope_index.json'] as const;
export type MropeFixtureName = (typeof MROPE_FIXTURES)[number];

interface RopeCase {
  name: string;
  input_ids: number[][];
  attention_mask: number[][];
  image_grid_thw: [number, number, number][];
  video_grid_thw: [number, number, number][];
  position_ids: number[][][];
  deltas: number[];
}

export interface MropeResult {
  name: string;
  positionIds: number[];
  deltas: number[];
  /** HF's own positions and deltas from the fixture, for the report. */
  hfPositionIds: number[];
  hfDeltas: number[];
}

/** M-RoPE positions of every case of one fixture file (parsed JSON), as HF computes them ('hf' video advance). */
export function mropePositions(file: MropeFixtureName, fixture: { cases: RopeCase[] }): MropeResult[] {
  return fixture.cases.map((c) => {
    const input = {
      inputIds: c.input_ids,
      attentionMask: c.attention_mask,
      imageGridThw: c.image_grid_thw,
      videoGridThw: c.video_grid_thw,
    };
    const got =
      file === 'ernie_rope_index.json'
        ? ernieRopeIndex(input, ERNIE_45_VL_TOKENS_HF, { videoTemporalAdvance: 'hf' })
        : qwen3VlRopeIndex(input, QWEN_VL_TOKENS, { videoTemporalAdvance: 'hf' });
    return {
      name: `${file.replace('_rope_index.json', '')}/${c.name}`,
      positionIds: idsToArray(got.positionIds),
      deltas: got.mropePositionDeltas,
      hfPositionIds: c.position_ids.flat(2),
      hfDeltas: c.deltas,
    };
  });
}
