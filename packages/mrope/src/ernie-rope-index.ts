import { checkGrid, type MropePositions } from './inputs.js';
import { computeRopeIndex, type RopeIndexInput, type RopeIndexOptions, typesFromIds } from './rope-index.js';

/** ERNIE-4.5-VL token ids and merge sizes that position ids depend on. */
export interface ErnieRopeIndexConfig {
  /** `im_patch_id` (100295). */
  imageTokenId: number;
  /** vLLM reuses im_patch_id for video patches (the default); HF's processor uses video_token_id 103367. */
  videoTokenId?: number;
  /** Needed only when image and video share a patch id: the latest start token tells them apart. */
  imageStartTokenId?: number;
  videoStartTokenId?: number;
  /** `spatial_conv_size` / vision `spatial_merge_size` (2). */
  spatialMergeSize?: number;
  /** `temporal_conv_size` / vision `temporal_merge_size` (2): video t' = t / this; images t' = 1. */
  temporalMergeSize?: number;
}

/** ERNIE-4.5-VL ids as vLLM sees them (one patch id for images and videos). */
export const ERNIE_45_VL_TOKENS: Readonly<Required<ErnieRopeIndexConfig>> = Object.freeze({
  imageTokenId: 100295,
  videoTokenId: 100295,
  imageStartTokenId: 101304,
  videoStartTokenId: 101306,
  spatialMergeSize: 2,
  temporalMergeSize: 2,
});

/** ERNIE-4.5-VL ids as HF transformers 5.17's processor writes them (separate video patch id). */
export const ERNIE_45_VL_TOKENS_HF: Readonly<Required<ErnieRopeIndexConfig>> = Object.freeze({
  ...ERNIE_45_VL_TOKENS,
  videoTokenId: 103367,
});

/**
 * 3D (t, h, w) position ids for an ERNIE-4.5-VL prompt.
 *
 * Text runs get 1D positions on all three axes. A vision item gets its merged
 * grid indices (t', h', w') plus the running start; video t' = t / temporal
 * merge, images t' = 1. The next text starts at the item's max + 1 (vLLM,
 * default) or at start + max(h', w') (HF 5.17, `videoTemporalAdvance: 'hf'`).
 *
 * vLLM: Ernie4_5_VLMoeForConditionalGeneration.get_mrope_input_positions;
 * HF: Ernie4_5_VLMoeModel.get_rope_index.
 */
export function ernieRopeIndex(input: RopeIndexInput, config: ErnieRopeIndexConfig, options: RopeIndexOptions = {}): MropePositions {
  const sm = config.spatialMergeSize ?? 2;
  const tm = config.temporalMergeSize ?? 2;
  const images = input.imageGridThw ?? [];
  const videos = input.videoGridThw ?? [];
  const ids = {
    image: config.imageTokenId,
    video: config.videoTokenId ?? config.imageTokenId,
    imageStart: config.imageStartTokenId,
    videoStart: config.videoStartTokenId,
  };
  return computeRopeIndex(
    input,
    {
      model: 'ERNIE-4.5-VL',
      tokenTypes: (row, b) => typesFromIds(row, ids, 'ERNIE-4.5-VL', b),
      count: (m) => (m === 1 ? images.length : videos.length),
      grid: (m, i) => {
        const g = (m === 1 ? images : videos)[i]!;
        const name = `${m === 1 ? 'image' : 'video'} ${i}`;
        const grid = checkGrid(g, `${m === 1 ? 'imageGridThw' : 'videoGridThw'}[${i}]`, { spatial: sm, temporal: m === 1 ? 1 : tm });
        const [t, h, w] = grid.merged;
        return { t, h, w, tIndex: (k) => k, label: `${name} (grid_thw [${g.join(', ')}] -> ${t}*${h}*${w} = ${grid.tokens} tokens)` };
      },
    },
    options,
  );
}
