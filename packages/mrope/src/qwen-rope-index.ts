import { checkGrid, type GridThw, type MropePositions } from './inputs.js';
import {
  computeRopeIndex,
  type LlmGrid,
  type RopeIndexInput,
  type RopeIndexOptions,
  type RopeIndexSpec,
  typesFromIds,
} from './rope-index.js';

/** Qwen2-VL / Qwen2.5-VL / Qwen3-VL token ids and merge size. */
export interface QwenRopeIndexConfig {
  /** `image_token_id` (151655). */
  imageTokenId: number;
  /** `video_token_id` (151656). */
  videoTokenId: number;
  /** vision `spatial_merge_size` (2). */
  spatialMergeSize?: number;
}

export const QWEN_VL_TOKENS: Readonly<Required<QwenRopeIndexConfig>> = Object.freeze({
  imageTokenId: 151655,
  videoTokenId: 151656,
  spatialMergeSize: 2,
});

/** The grids a Qwen rope index walks, and how each video places its frames on the t axis. */
interface QwenItems {
  images: readonly GridThw[];
  videos: readonly GridThw[];
  /** Video i's frame k -> its t index (default: k). */
  tIndexOf?: (videoIndex: number) => (k: number) => number;
  /** Video i's name in error messages (default `video ${i}`) and the input it comes from (default `videoGridThw[${i}]`). */
  videoName?: (i: number) => string;
  videoInput?: (i: number) => string;
}

function qwenSpec(model: string, config: QwenRopeIndexConfig, items: QwenItems): RopeIndexSpec {
  const { images, videos, tIndexOf = () => (k) => k, videoName = (i) => `video ${i}`, videoInput = (i) => `videoGridThw[${i}]` } = items;
  const sm = config.spatialMergeSize ?? 2;
  const ids = { image: config.imageTokenId, video: config.videoTokenId };
  return {
    model,
    tokenTypes: (row, b) => typesFromIds(row, ids, model, b),
    count: (m) => (m === 1 ? images.length : videos.length),
    grid: (m, i): LlmGrid => {
      const g = (m === 1 ? images : videos)[i]!;
      const name = m === 1 ? `image ${i}` : videoName(i);
      // Qwen's grid t is already temporally merged (frames / temporal_patch_size).
      const grid = checkGrid(g, m === 1 ? `imageGridThw[${i}]` : videoInput(i), { spatial: sm });
      const [t, h, w] = grid.merged;
      return {
        t,
        h,
        w,
        tIndex: m === 1 ? (k) => k : tIndexOf(i),
        label: `${name} (grid_thw [${g.join(', ')}] -> ${t}*${h}*${w} = ${grid.tokens} tokens)`,
      };
    },
  };
}

/** Qwen2-VL position ids (HF Qwen2VLModel.get_rope_index; vLLM Qwen2VLForConditionalGeneration). */
export function qwen2VlRopeIndex(input: RopeIndexInput, config: QwenRopeIndexConfig, options: RopeIndexOptions = {}): MropePositions {
  return computeRopeIndex(
    input,
    qwenSpec('Qwen2-VL', config, { images: input.imageGridThw ?? [], videos: input.videoGridThw ?? [] }),
    options,
  );
}

/**
 * How Qwen2.5-VL spaces video frames on the t axis.
 * - 'vllm': t index = floor(k * second_per_grid_t * tokens_per_second) (vLLM, HF 4.x).
 * - 'hf': t index = k * (tokens_per_second * int(second_per_grid_t)) (HF 5.17: the
 *   seconds are truncated first, so 0.5 s per grid puts every frame at t index 0).
 */
export type TemporalScale = 'vllm' | 'hf';

export interface Qwen25RopeIndexInput extends RopeIndexInput {
  /** Seconds per temporal grid step, one per video (processor output); default 1. */
  secondPerGridTs?: readonly number[];
}

export interface Qwen25RopeIndexConfig extends QwenRopeIndexConfig {
  /** vision `tokens_per_second` (2 in the released checkpoints). */
  tokensPerSecond: number;
}

export interface Qwen25RopeIndexOptions extends RopeIndexOptions {
  /** Default 'vllm'. */
  temporalScale?: TemporalScale;
}

/** Qwen2.5-VL position ids: video t scaled by second_per_grid_t * tokens_per_second. */
export function qwen25VlRopeIndex(
  input: Qwen25RopeIndexInput,
  config: Qwen25RopeIndexConfig,
  options: Qwen25RopeIndexOptions = {},
): MropePositions {
  const scale = options.temporalScale ?? 'vllm';
  const tps = config.tokensPerSecond;
  const tIndexOf = (i: number) => {
    const sec = input.secondPerGridTs?.[i] ?? 1;
    if (scale === 'hf') {
      const step = tps * Math.trunc(sec);
      return (k: number) => k * step;
    }
    // vLLM multiplies an int64 arange by Python floats in torch: float32 products, then .long().
    const f = Math.fround(sec);
    return (k: number) => Math.floor(Math.fround(Math.fround(k * f) * tps));
  };
  return computeRopeIndex(
    input,
    qwenSpec('Qwen2.5-VL', config, { images: input.imageGridThw ?? [], videos: input.videoGridThw ?? [], tIndexOf }),
    options,
  );
}

/**
 * Qwen3-VL position ids. Videos are written frame by frame with timestamp text
 * between frames (`<t> <vision_start> frame <vision_end> ...`), so each video
 * grid [t, h, w] is split into t grids [1, h, w], each its own item (HF 5.17
 * Qwen3VLModel.get_rope_index). The timestamps carry time; t' is always 1.
 */
export function qwen3VlRopeIndex(input: RopeIndexInput, config: QwenRopeIndexConfig, options: RopeIndexOptions = {}): MropePositions {
  const frames: GridThw[] = [];
  const names: string[] = [];
  const inputs: string[] = [];
  for (const [v, g] of (input.videoGridThw ?? []).entries()) {
    for (let f = 0; f < g[0]; f++) {
      frames.push([1, g[1], g[2]]);
      names.push(`video ${v} frame ${f}`);
      inputs.push(`videoGridThw[${v}] (frame ${f})`);
    }
  }
  const spec = qwenSpec('Qwen3-VL', config, {
    images: input.imageGridThw ?? [],
    videos: frames,
    videoName: (i) => names[i] ?? `video frame ${i}`,
    videoInput: (i) => inputs[i] ?? `videoGridThw frame ${i}`,
  });
  return computeRopeIndex(input, spec, options);
}
