import { type CosSinTables, decodePositionIds, ernieTextRotaryCosSin, type IntArray } from '@vlmkit/mrope';
import type { ErnieTextConfig } from './config.js';

/**
 * The decoder's `rope_cos` / `rope_sin` inputs [B, S, headDim/2] from 3D
 * position ids [3, B, S] (t, h, w rows; @vlmkit/mrope `ernieRopeIndex` makes
 * them for a prompt, `ernieDecodePositions` for generated tokens). ERNIE
 * text rotary: frequency i follows h (even i) or w (odd i) below
 * headDim/2 - freqAllocation and t above; computed in float32 as torch does
 * (@vlmkit/mrope `ernieTextRotaryCosSin`).
 */
export function ernieRotaryTables(positionIds: IntArray, shape: readonly [3, number, number], config: ErnieTextConfig): CosSinTables {
  return ernieTextRotaryCosSin(
    { positionIds, shape },
    { headDim: config.headDim, ropeTheta: config.ropeTheta, freqAllocation: config.freqAllocation },
  );
}

/**
 * Position ids [3, B, steps] of the next tokens in a decode loop: the same
 * value on all three axes, (real tokens so far in the row) + the prompt's
 * rope delta (HF: cumsum(attention_mask) - 1 + rope_deltas; vLLM: context
 * length + mrope delta). Text-only prompts have delta 0.
 */
export function ernieDecodePositions(
  ropeDeltas: readonly number[],
  tokensSoFar: number | readonly number[],
  steps = 1,
): { positionIds: BigInt64Array; shape: [3, number, number] } {
  const r = decodePositionIds(ropeDeltas, tokensSoFar, steps, 'int64');
  return { positionIds: r.positionIds as BigInt64Array, shape: r.shape };
}
