import { Grid, type GridThw } from '@vlmkit/config';
import { visionRotaryCosSin, visionRotaryPositionIds } from '@vlmkit/mrope';
import { VisionTowerError } from '../errors.js';
import { ernieVisionHeadDim, type VisionBlockConfig } from './config.js';

/** What the standalone tower model takes besides pixel_values, for a batch of images/videos. */
export interface ErnieVisionInputs {
  /** Np = sum over grids of t*h*w. */
  numPatches: number;
  /** [Np, headDim/2] float32, entries [0, headDim/4) rotate with the patch's h, the rest with w. */
  rotaryCos: Float32Array;
  rotarySin: Float32Array;
  rotaryShape: [number, number];
  /**
   * [Np] int32: the frame each patch belongs to (0, 1, ...; every frame of every
   * grid is its own attention sequence, vLLM's cu_seqlens).
   */
  segmentIds: Int32Array;
  /** The same split as cumulative lengths [0, h*w, 2*h*w, ...] (vLLM/HF cu_seqlens). */
  cuSeqlens: number[];
}

/**
 * The per-patch rotary tables and frame ids for `grids` ([t, h, w] per image
 * or video, in pixel_values order). Rotary ids are the 2D (h, w) coordinates
 * permuted into spatial-merge windows (vLLM: Ernie4_5_VisionTransformer.rot_pos_emb),
 * tables from @vlmkit/mrope (theta 10000, float32 angles, neox halves). Qwen3-VL's tower takes the same
 * (HF vision_utils.get_vision_position_ids, get_vision_cu_seqlens).
 */
export function ernieVisionInputs(grids: readonly GridThw[], config: VisionBlockConfig): ErnieVisionInputs {
  const m = config.spatialMergeSize;
  const cuSeqlens = [0];
  for (const [i, thw] of grids.entries()) {
    const { t, h, w } = Grid.of(thw, `grid_thw[${i}]`, { spatial: m }, (message) => new VisionTowerError('INVALID_GRID', message));
    for (let f = 0; f < t; f++) cuSeqlens.push(cuSeqlens.at(-1)! + h * w);
  }
  const numPatches = cuSeqlens.at(-1)!;
  const segmentIds = new Int32Array(numPatches);
  for (let s = 0; s + 1 < cuSeqlens.length; s++) segmentIds.fill(s, cuSeqlens[s]!, cuSeqlens[s + 1]!);
  const ids = visionRotaryPositionIds(grids, m);
  const { cos, sin, shape } = visionRotaryCosSin(ids, { headDim: ernieVisionHeadDim(config), theta: config.ropeTheta });
  return { numPatches, rotaryCos: cos, rotarySin: sin, rotaryShape: shape, segmentIds, cuSeqlens };
}
