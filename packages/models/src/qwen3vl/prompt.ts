import { Grid, type GridThw } from '@vlmkit/config';
import { qwen3VlRopeIndex } from '@vlmkit/mrope';
import { promptBatch } from '../decode-state.js';
import { checkCount, checkTokenTypes, checkUnmasked } from '../ernie/prompt.js';
import { ModelError } from '../errors.js';
import type { Qwen3VLConfig } from './config.js';

/** What the decoder needs to know about a batch of prompts, worked out on the host. */
export interface Qwen3VlPrompt {
  batch: number;
  seq: number;
  inputIds: BigInt64Array;
  attentionMask: BigInt64Array;
  /** Flattened b*S+s indices of the image / video placeholders, row-major (as masked_scatter fills them). */
  imagePositions: number[];
  videoPositions: number[];
  /** [3, B, S] (t, h, w), 0 on left padding, and the per-row decode deltas. */
  positionIds: BigInt64Array;
  ropeDeltas: number[];
  /** Unmasked tokens per row: where each row's generated tokens continue. */
  realTokens: number[];
}

/** A prompt batch as plain arrays (the model reads them out of its HF-named inputs). */
export interface Qwen3VlPromptInputs {
  inputIds: BigInt64Array;
  shape: readonly [number, number];
  attentionMask?: BigInt64Array | undefined;
  imageGrids: readonly GridThw[];
  videoGrids: readonly GridThw[];
  /** HF `mm_token_type_ids` (0 text, 1 image pad, 2 video pad), when the caller has it: must agree with the ids. */
  mmTokenType?: BigInt64Array | undefined;
}

/** The grids by the one grid rule: h and w multiples of spatial_merge_size (grid t is already temporally merged). */
function promptGrids(grids: readonly GridThw[], config: Qwen3VLConfig, name: string): Grid[] {
  const fail = (message: string) => new ModelError('BAD_INPUT', `${message}, as the processor makes them`);
  return grids.map((g, i) => Grid.of(g, `${name}[${i}]`, { spatial: config.vision.spatialMergeSize }, fail));
}

/**
 * Finds the placeholders, checks their count against the grids (HF's get_placeholder_mask), and computes the
 * 3D position ids as HF 5.17 Qwen3VLModel.get_rope_index (@vlmkit/mrope `qwen3VlRopeIndex`: each temporal
 * patch of a video its own t = 1 grid; padding at 0).
 */
export function analyzeQwen3VlPrompt(p: Qwen3VlPromptInputs, config: Qwen3VLConfig): Qwen3VlPrompt {
  const { batch: B, seq: S, attentionMask: mask, realTokens } = promptBatch(p.inputIds, p.shape, p.attentionMask);
  const t = config.tokens;
  const imagePositions: number[] = [];
  const videoPositions: number[] = [];
  p.inputIds.forEach((v, i) => {
    if (v === BigInt(t.image)) imagePositions.push(i);
    else if (v === BigInt(t.video)) videoPositions.push(i);
  });
  const images = promptGrids(p.imageGrids, config, 'image_grid_thw');
  const videos = promptGrids(p.videoGrids, config, 'video_grid_thw');
  checkCount('image', t.image, imagePositions.length, images);
  checkCount('video', t.video, videoPositions.length, videos);
  if (p.mmTokenType) checkTokenTypes(p.mmTokenType, imagePositions, videoPositions, S);
  checkUnmasked('image', imagePositions, mask, S, images);
  checkUnmasked('video', videoPositions, mask, S, videos);
  const rows = Array.from({ length: B }, (_, b) => p.inputIds.subarray(b * S, (b + 1) * S));
  const maskRows = Array.from({ length: B }, (_, b) => mask.subarray(b * S, (b + 1) * S));
  const pos = qwen3VlRopeIndex(
    { inputIds: rows, attentionMask: maskRows, imageGridThw: p.imageGrids, videoGridThw: p.videoGrids },
    { imageTokenId: t.image, videoTokenId: t.video, spatialMergeSize: config.vision.spatialMergeSize },
    { dtype: 'int64' },
  );
  return {
    batch: B,
    seq: S,
    inputIds: p.inputIds,
    attentionMask: mask,
    imagePositions,
    videoPositions,
    positionIds: pos.positionIds as BigInt64Array,
    ropeDeltas: pos.mropePositionDeltas,
    realTokens,
  };
}
