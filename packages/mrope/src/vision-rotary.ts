import { MropeError } from './errors.js';
import { checkGrid, type GridThw } from './inputs.js';
import { angle, ropeInverseFrequencies } from './inv-freq.js';

/** (h, w) patch coordinates [N, 2] in the vision tower's patch order, N = sum of t*h*w. */
export interface VisionPositionIds {
  positionIds: Int32Array;
  shape: [number, 2];
}

/**
 * The vision tower's 2D rotary position ids. Patches come in spatial-merge
 * windows (block-major: each m x m window's patches are consecutive, windows in
 * raster order), so h/w ids are permuted the same way, then repeated per frame.
 * vLLM: Ernie4_5_VisionTransformer.rot_pos_emb; HF: vision_utils.get_vision_position_ids.
 * Qwen2-VL / Qwen2.5-VL / Qwen3-VL use the identical scheme.
 */
export function visionRotaryPositionIds(gridThw: readonly GridThw[], spatialMergeSize = 2): VisionPositionIds {
  const m = spatialMergeSize;
  let n = 0;
  for (const [i, g] of gridThw.entries()) {
    n += checkGrid(g, `gridThw[${i}]`, { spatial: m }).patches;
  }
  const out = new Int32Array(n * 2);
  let k = 0;
  for (const [t, h, w] of gridThw) {
    for (let f = 0; f < t; f++) {
      for (let bh = 0; bh < h / m; bh++) {
        for (let bw = 0; bw < w / m; bw++) {
          for (let ih = 0; ih < m; ih++) {
            for (let iw = 0; iw < m; iw++) {
              out[k++] = bh * m + ih;
              out[k++] = bw * m + iw;
            }
          }
        }
      }
    }
  }
  return { positionIds: out, shape: [n, 2] };
}

/** Half-width vision tables [N, headDim/2]: entries [0, headDim/4) rotate with h, the rest with w. */
export interface VisionCosSin {
  cos: Float32Array;
  sin: Float32Array;
  shape: [number, number];
}

export interface VisionRotaryConfig {
  /** Vision attention head dim (ERNIE / Qwen2-VL: 1280 / 16 = 80). */
  headDim: number;
  /** 10000 for ERNIE and Qwen-VL vision towers. */
  theta?: number;
  invFreq?: Float32Array;
}

/**
 * cos/sin [N, headDim/2] for the vision tower: headDim/4 inverse frequencies
 * 1 / theta^(2i / (headDim/2)), angles laid out [h * f | w * f], applied neox
 * style (halves) in float32. HF's [N, headDim] tables are these concatenated
 * twice (`expandRotaryTable(t, 'halves')`).
 * vLLM: Ernie4_5_VisionRotaryEmbedding(head_dim // 2); HF: Ernie4_5_VLMoeVisionRotaryEmbedding.
 */
export function visionRotaryCosSin(ids: VisionPositionIds, config: VisionRotaryConfig): VisionCosSin {
  const quarter = config.headDim / 4;
  if (!Number.isInteger(quarter) || quarter <= 0) {
    throw new MropeError('INVALID_ROTARY_CONFIG', `vision rotary: headDim ${config.headDim} must be a positive multiple of 4.`);
  }
  const inv = config.invFreq ?? ropeInverseFrequencies(config.headDim / 2, config.theta ?? 10000);
  if (inv.length !== quarter)
    throw new MropeError('INVALID_ROTARY_CONFIG', `invFreq has ${inv.length} entries, expected headDim / 4 = ${quarter}.`);
  const n = ids.shape[0];
  const half = 2 * quarter;
  const cos = new Float32Array(n * half);
  const sin = new Float32Array(n * half);
  for (let p = 0; p < n; p++) {
    for (let axis = 0; axis < 2; axis++) {
      const pos = ids.positionIds[2 * p + axis]!;
      for (let i = 0; i < quarter; i++) {
        const a = angle(pos, inv[i]!);
        cos[p * half + axis * quarter + i] = Math.cos(a);
        sin[p * half + axis * quarter + i] = Math.sin(a);
      }
    }
  }
  return { cos, sin, shape: [n, half] };
}
