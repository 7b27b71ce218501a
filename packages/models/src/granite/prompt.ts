import { granitePositionIds } from '@vlmkit/moe-decoder';
import { promptBatch } from '../decode-state.js';
import { ModelError } from '../errors.js';
import type { Granite4VisionConfig } from './config.js';

/** What the decoder needs to know about a batch of prompts, worked out on the host. */
export interface GranitePrompt {
  batch: number;
  seq: number;
  inputIds: BigInt64Array;
  attentionMask: BigInt64Array;
  /** [B, S] 1D positions (Granite's rope is 1D: no deltas). */
  positionIds: BigInt64Array;
  /** Flattened b*S+s indices of the image placeholders, in packing order (row-major, as masked_scatter). */
  imagePositions: number[];
  /** Unmasked tokens per row: where each row's generated tokens continue (`graniteDecodePositions`). */
  realTokens: number[];
}

/** A prompt batch as plain arrays (the model reads them out of its HF-named inputs, checked by ../inputs-check.ts). */
export interface GranitePromptInputs {
  inputIds: BigInt64Array;
  shape: readonly [number, number];
  attentionMask?: BigInt64Array | undefined;
  /** HF `position_ids` [B, S], when the caller has them; else HF generate's cumsum(mask) - 1, 1 on padding. */
  positionIds?: BigInt64Array | undefined;
}

/**
 * Finds the image placeholders and works out the positions. The placeholder
 * count is checked against the packed image features once the images are
 * planned (the vision encoder's `packPlan`), as HF does before scattering.
 */
export function analyzeGranitePrompt(p: GranitePromptInputs, config: Granite4VisionConfig): GranitePrompt {
  const { batch: B, seq: S, attentionMask: mask, realTokens } = promptBatch(p.inputIds, p.shape, p.attentionMask);
  if (p.positionIds !== undefined && p.positionIds.length !== B * S)
    throw new ModelError('BAD_INPUT', `position_ids must have the shape of input_ids [${B}, ${S}], got ${p.positionIds.length} values`);
  const image = BigInt(config.tokens.image);
  const imagePositions: number[] = [];
  p.inputIds.forEach((v, i) => {
    if (v === image) imagePositions.push(i);
  });
  // HF prepare_inputs_for_generation: cumsum(attention_mask) - 1, masked_fill_(attention_mask == 0, 1).
  const positionIds = p.positionIds ?? granitePositionIds(mask, B, 1);
  return { batch: B, seq: S, inputIds: p.inputIds, attentionMask: mask, positionIds, imagePositions, realTokens };
}
