import { MropeError } from './errors.js';
import { type IntArray, idsToNumbers } from './inputs.js';
import { angle, ropeInverseFrequencies } from './inv-freq.js';

/** 3D position ids with their shape: [3, S] or [3, B, S] (a `MropePositions` fits). */
export interface PositionIdsLike {
  positionIds: IntArray;
  shape: readonly [3, number] | readonly [3, number, number];
}

/** Half-width rotary tables: entry [b, s, i] is cos/sin of frequency i's angle; shape [B, S, headDim / 2]. */
export interface CosSinTables {
  cos: Float32Array;
  sin: Float32Array;
  shape: [number, number, number];
}

/** Which position axis (0 t, 1 h, 2 w) drives each of the headDim/2 frequencies. */
export type FrequencyAxes = Uint8Array;

/**
 * ERNIE-4.5-VL: frequencies [0, half - freqAllocation) alternate h (even i) and w
 * (odd i); the last freqAllocation frequencies use t.
 * vLLM: Ernie4_5_VLRotaryEmbedding ("[h w h w ... t t t]"); HF gets the same by
 * pre-permuting inv_freq and re-interleaving the h/w sections.
 */
export function ernieFrequencyAxes(headDim: number, freqAllocation: number): FrequencyAxes {
  const half = headDim / 2;
  if (
    !Number.isInteger(half) ||
    !Number.isInteger(freqAllocation) ||
    freqAllocation < 0 ||
    freqAllocation > half ||
    (half - freqAllocation) % 2 !== 0
  ) {
    throw new MropeError(
      'INVALID_ROTARY_CONFIG',
      `ERNIE rotary: headDim ${headDim} / 2 minus freq_allocation ${freqAllocation} must be a non-negative even number (h and w take equal shares).`,
    );
  }
  const hw = half - freqAllocation;
  return Uint8Array.from({ length: half }, (_, i) => (i >= hw ? 0 : i % 2 === 0 ? 1 : 2));
}

function checkSection(section: readonly number[], half: number, model: string): void {
  if (section.length !== 3 || section.some((s) => !Number.isInteger(s) || s < 0) || section[0]! + section[1]! + section[2]! !== half) {
    throw new MropeError(
      'INVALID_ROTARY_CONFIG',
      `${model}: mrope_section [${section.join(', ')}] must be three non-negative integers adding up to headDim / 2 = ${half}.`,
    );
  }
}

/** Qwen2-VL / Qwen2.5-VL: contiguous sections [t | h | w] of mrope_section sizes (HF Qwen2VLRotaryEmbedding). */
export function sectionedFrequencyAxes(headDim: number, mropeSection: readonly number[]): FrequencyAxes {
  const half = headDim / 2;
  checkSection(mropeSection, half, 'Qwen2-VL');
  const [t, h] = [mropeSection[0]!, mropeSection[1]!];
  return Uint8Array.from({ length: half }, (_, i) => (i < t ? 0 : i < t + h ? 1 : 2));
}

/** Qwen3-VL: interleaved [t h w t h w ...]; frequency i is h when i % 3 = 1 and i < 3*section[1], w when i % 3 = 2 and i < 3*section[2], else t. */
export function interleavedFrequencyAxes(headDim: number, mropeSection: readonly number[]): FrequencyAxes {
  const half = headDim / 2;
  checkSection(mropeSection, half, 'Qwen3-VL');
  return Uint8Array.from({ length: half }, (_, i) =>
    i % 3 === 1 && i < 3 * mropeSection[1]! ? 1 : i % 3 === 2 && i < 3 * mropeSection[2]! ? 2 : 0,
  );
}

/**
 * cos/sin [B, S, axes.length] where frequency i rotates by
 * float32(position[axes[i]] * invFreq[i]), as torch computes it in float32.
 */
export function mropeCosSin(pos: PositionIdsLike, axes: FrequencyAxes, invFreq: Float32Array): CosSinTables {
  const half = axes.length;
  if (invFreq.length !== half)
    throw new MropeError('INVALID_ROTARY_CONFIG', `invFreq has ${invFreq.length} entries, expected headDim / 2 = ${half}.`);
  const [batch, seq] = pos.shape.length === 2 ? [1, pos.shape[1]] : [pos.shape[1], pos.shape[2]];
  const ids = idsToNumbers(pos.positionIds);
  if (ids.length !== 3 * batch * seq) {
    throw new MropeError(
      'SHAPE_MISMATCH',
      `positionIds has ${ids.length} values; shape [${pos.shape.join(', ')}] needs ${3 * batch * seq}.`,
    );
  }
  const cos = new Float32Array(batch * seq * half);
  const sin = new Float32Array(batch * seq * half);
  for (let b = 0; b < batch; b++) {
    for (let s = 0; s < seq; s++) {
      const o = (b * seq + s) * half;
      for (let i = 0; i < half; i++) {
        const a = angle(ids[(axes[i]! * batch + b) * seq + s]!, invFreq[i]!);
        cos[o + i] = Math.cos(a);
        sin[o + i] = Math.sin(a);
      }
    }
  }
  return { cos, sin, shape: [batch, seq, half] };
}

export interface ErnieTextRotaryConfig {
  headDim: number;
  /** `rope_theta` (500000 for ERNIE-4.5-VL). */
  ropeTheta: number;
  /** `freq_allocation` (20): how many of the last frequencies follow t. */
  freqAllocation: number;
  /** Override the inverse frequencies (unpermuted, headDim/2 entries), e.g. with a reference's own float32 table. */
  invFreq?: Float32Array;
}

/**
 * ERNIE-4.5-VL text rotary tables [B, S, headDim/2]. Apply them GPT-J style
 * (interleaved pairs): for pair i, (x[2i], x[2i+1]) ->
 * (x[2i] cos_i - x[2i+1] sin_i, x[2i+1] cos_i + x[2i] sin_i).
 * HF's cos/sin [B, S, headDim] are these with each entry repeated twice
 * (`expandRotaryTable(t, 'interleaved')`).
 */
export function ernieTextRotaryCosSin(pos: PositionIdsLike, config: ErnieTextRotaryConfig): CosSinTables {
  const axes = ernieFrequencyAxes(config.headDim, config.freqAllocation);
  return mropeCosSin(pos, axes, config.invFreq ?? ropeInverseFrequencies(config.headDim, config.ropeTheta));
}

export interface QwenTextRotaryConfig {
  headDim: number;
  ropeTheta: number;
  /** `rope_parameters.mrope_section`: Qwen2/2.5-VL [16, 24, 24], Qwen3-VL [24, 20, 20]. */
  mropeSection: readonly number[];
  invFreq?: Float32Array;
}

/** Qwen2-VL / Qwen2.5-VL sectioned M-RoPE tables [B, S, headDim/2], applied neox style (halves). */
export function qwen2VlMropeCosSin(pos: PositionIdsLike, config: QwenTextRotaryConfig): CosSinTables {
  return mropeCosSin(
    pos,
    sectionedFrequencyAxes(config.headDim, config.mropeSection),
    config.invFreq ?? ropeInverseFrequencies(config.headDim, config.ropeTheta),
  );
}

/** Qwen3-VL interleaved M-RoPE tables [B, S, headDim/2], applied neox style (halves). */
export function qwen3VlMropeCosSin(pos: PositionIdsLike, config: QwenTextRotaryConfig): CosSinTables {
  return mropeCosSin(
    pos,
    interleavedFrequencyAxes(config.headDim, config.mropeSection),
    config.invFreq ?? ropeInverseFrequencies(config.headDim, config.ropeTheta),
  );
}

/**
 * Full-width [..., 2 * half] tables as HF hands them to attention:
 * 'interleaved' repeats each entry twice (GPT-J pairs; HF repeat_interleave(2)),
 * 'halves' concatenates the table with itself (neox; HF cat((f, f))).
 */
export function expandRotaryTable(table: Float32Array, half: number, layout: 'interleaved' | 'halves'): Float32Array {
  const rows = table.length / half;
  const out = new Float32Array(table.length * 2);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < half; i++) {
      const v = table[r * half + i]!;
      if (layout === 'interleaved') {
        out[r * 2 * half + 2 * i] = v;
        out[r * 2 * half + 2 * i + 1] = v;
      } else {
        out[r * 2 * half + i] = v;
        out[r * 2 * half + half + i] = v;
      }
    }
  }
  return out;
}
