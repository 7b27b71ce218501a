import type { GridThw } from '@vlmkit/config';
import { type ErnieVisionInputs, ernieVisionInputs } from '../ernie/inputs.js';
import type { Qwen3VlVisionConfig } from './config.js';

/** Taps per patch of the bilinear position interpolation: 2 rows x 2 columns of the learned grid. */
export const POSITION_TAPS = 4;

/** Where each patch reads the learned position table: 4 rows of `pos_embed.weight` and their weights. */
export interface PositionInterpolation {
  /** [Np, 4] int32 rows of pos_embed (row * side + column), taps (floor h, floor w), (floor h, ceil w), (ceil h, floor w), (ceil h, ceil w). */
  posIndices: Int32Array;
  /** [Np, 4] float32 bilinear weights, the products of the row and column weights. */
  posWeights: Float32Array;
  posShape: [number, typeof POSITION_TAPS];
}

/** What the standalone tower takes besides pixel_values: ERNIE's rotary tables and frame ids, and the position taps. */
export interface Qwen3VlVisionInputs extends ErnieVisionInputs, PositionInterpolation {}

/**
 * The host-side inputs of the tower for `grids` ([t, h, w] per image or video, in pixel_values order):
 * the 2D rotary tables and frame ids, computed as ERNIE's (HF get_vision_position_ids and
 * get_vision_cu_seqlens are the same for both), and the learned position table's interpolation taps.
 * Throws `VisionTowerError` INVALID_GRID for a grid that is not positive or not divisible by the merge size.
 */
export function qwen3VlVisionInputs(grids: readonly GridThw[], config: Qwen3VlVisionConfig): Qwen3VlVisionInputs {
  return { ...ernieVisionInputs(grids, config), ...positionInterpolation(grids, config) };
}

/**
 * The learned position grid resampled to each image's grid as F.interpolate(bilinear, align_corners=True)
 * does, stated as 4 gather taps and weights per patch, patches in spatial-merge-window order and repeated per
 * frame. HF 5.17: vision_utils.get_vision_interpolation_indices_and_weights (Qwen3VLVisionModel; vLLM's
 * fast_pos_embed_interpolate is the same grid). Every step is a float32 operation as torch does it, so the
 * weights are bit-equal to HF's. Grids must be valid (`qwen3VlVisionInputs` checks them first).
 */
export function positionInterpolation(
  grids: readonly GridThw[],
  config: Pick<Qwen3VlVisionConfig, 'positionGridSide' | 'spatialMergeSize'>,
): PositionInterpolation {
  const side = config.positionGridSide;
  const m = config.spatialMergeSize;
  const total = grids.reduce((n, [t, h, w]) => n + t * h * w, 0);
  const posIndices = new Int32Array(total * POSITION_TAPS);
  const posWeights = new Float32Array(total * POSITION_TAPS);
  let p = 0;
  for (const [t, h, w] of grids) {
    const rows = axisTaps(h, side);
    const cols = axisTaps(w, side);
    // One frame's taps in window order (block row, block column, row in block, column in block), repeated t times.
    const frameStart = p;
    for (let bh = 0; bh < h / m; bh++) {
      for (let bw = 0; bw < w / m; bw++) {
        for (let ih = 0; ih < m; ih++) {
          for (let iw = 0; iw < m; iw++) {
            const [r, c] = [bh * m + ih, bw * m + iw];
            for (let a = 0; a < 2; a++) {
              for (let b = 0; b < 2; b++) {
                posIndices[p * 4 + 2 * a + b] = rows.taps[2 * r + a]! * side + cols.taps[2 * c + b]!;
                posWeights[p * 4 + 2 * a + b] = Math.fround(rows.weights[2 * r + a]! * cols.weights[2 * c + b]!);
              }
            }
            p++;
          }
        }
      }
    }
    const frame = p - frameStart;
    for (let f = 1; f < t; f++) {
      posIndices.copyWithin(p * 4, frameStart * 4, (frameStart + frame) * 4);
      posWeights.copyWithin(p * 4, frameStart * 4, (frameStart + frame) * 4);
      p += frame;
    }
  }
  return { posIndices, posWeights, posShape: [total, POSITION_TAPS] };
}

/**
 * Per target index i < size on one axis: the 2 source taps (floor, floor + 1, clamped to the grid) and
 * their weights. HF _interpolation_axis_taps_weights (bilinear, align_corners=True, border padding), each
 * float32 rounding in torch's order: src = i * (side - 1) / max(size - 1, 1); weight = max(1 - |src - tap|, 0).
 */
function axisTaps(size: number, side: number): { taps: Int32Array; weights: Float32Array } {
  const f = Math.fround;
  const taps = new Int32Array(2 * size);
  const weights = new Float32Array(2 * size);
  const denominator = Math.max(size - 1, 1);
  for (let i = 0; i < size; i++) {
    // float32 / float32 computed in double then rounded once is the correctly rounded float32 quotient.
    const src = f(f(i * (side - 1)) / denominator);
    const floor = Math.floor(src);
    for (let k = 0; k < 2; k++) {
      taps[2 * i + k] = Math.min(Math.max(floor + k, 0), side - 1);
      const distance = Math.abs(f(f(src - floor) - k));
      weights[2 * i + k] = Math.max(f(1 - distance), 0);
    }
  }
  return { taps, weights };
}
