import { Grid, type GridThw } from '@vlmkit/config';
import { ernieRopeIndex } from '@vlmkit/mrope';
import { promptBatch } from '../decode-state.js';
import { ModelError } from '../errors.js';
import type { Ernie45VLConfig } from './config.js';
import { visionExpertMask } from './tokens.js';

/** What the decoder needs to know about a batch of prompts, worked out on the host. */
export interface ErniePrompt {
  batch: number;
  seq: number;
  inputIds: BigInt64Array;
  attentionMask: BigInt64Array;
  /** Flattened b*S+s indices of the image / video placeholders, in scatter order (row-major, as masked_scatter). */
  imagePositions: number[];
  videoPositions: number[];
  /** 1: vision experts (patch tokens and image/video start/end), 0: text experts. */
  moeTokenType: BigInt64Array;
  /** [3, B, S] (t, h, w) and the per-row decode deltas. */
  positionIds: BigInt64Array;
  ropeDeltas: number[];
  /** Unmasked tokens per row: where each row's generated tokens continue (`ernieDecodePositions`). */
  realTokens: number[];
}

/** A prompt batch as plain arrays (the model reads them out of its HF-named inputs, checked by ../inputs-check.ts). */
export interface ErniePromptInputs {
  inputIds: BigInt64Array;
  shape: readonly [number, number];
  attentionMask?: BigInt64Array | undefined;
  imageGrids: readonly GridThw[];
  videoGrids: readonly GridThw[];
  /** HF `mm_token_type_ids` (0 text, 1 image, 2 video placeholder), when the caller has it: must agree with the ids. */
  mmTokenType?: BigInt64Array | undefined;
  /** HF `moe_mm_token_type_ids`, when the caller has it; computed from the ids otherwise. */
  moeTokenType?: BigInt64Array | undefined;
}

/**
 * The grids checked by the one grid rule (@vlmkit/config `Grid`): h and w multiples of spatial_merge_size, a
 * video's t of temporal_merge_size (the processor makes them so). Any other would give a fractional
 * placeholder count, blamed on the prompt.
 */
function promptGrids(grids: readonly GridThw[], config: Ernie45VLConfig, video: boolean): Grid[] {
  const name = video ? 'video_grid_thw' : 'image_grid_thw';
  const merge = { spatial: config.resampler.spatialMergeSize, temporal: video ? config.resampler.temporalMergeSize : 1 };
  const fail = (message: string) => new ModelError('BAD_INPUT', `${message}, as the processor makes them`);
  return grids.map((g, i) => Grid.of(g, `${name}[${i}]`, merge, fail));
}

/** Placeholders the grids expand to: images t*h*w/m^2, videos (t/temporal)*h*w/m^2 (vLLM and HF agree). */
export function placeholderCount(grids: readonly GridThw[], config: Ernie45VLConfig, video: boolean): number {
  return promptGrids(grids, config, video).reduce((n, g) => n + g.tokens, 0);
}

/**
 * Finds the placeholders, checks their count against the grids (as HF does
 * before scattering features), routes tokens to experts, and computes the
 * 3D position ids (vLLM or HF rules, per `config.reference`).
 */
export function analyzeErniePrompt(p: ErniePromptInputs, config: Ernie45VLConfig): ErniePrompt {
  const { batch: B, seq: S, attentionMask: mask, realTokens } = promptBatch(p.inputIds, p.shape, p.attentionMask);
  const t = config.tokens;
  const ids = Array.from(p.inputIds, Number);
  const imagePositions: number[] = [];
  const videoPositions: number[] = [];
  for (let b = 0; b < B; b++) {
    // With one shared patch id (hub layout), the latest start token says whether a run is an image or a video.
    let inVideo = false;
    for (let s = 0; s < S; s++) {
      const i = b * S + s;
      const id = ids[i]!;
      if (id === t.videoStart) inVideo = true;
      else if (id === t.imageStart) inVideo = false;
      if (id !== t.image && id !== t.video) continue;
      const isVideo = t.image === t.video ? inVideo : id === t.video;
      (isVideo ? videoPositions : imagePositions).push(i);
    }
  }
  const images = promptGrids(p.imageGrids, config, false);
  const videos = promptGrids(p.videoGrids, config, true);
  checkCount('image', t.image, imagePositions.length, images);
  checkCount('video', t.video, videoPositions.length, videos);
  if (p.mmTokenType) checkTokenTypes(p.mmTokenType, imagePositions, videoPositions, S);
  checkUnmasked('image', imagePositions, mask, S, images);
  checkUnmasked('video', videoPositions, mask, S, videos);

  const moe = p.moeTokenType ?? BigInt64Array.from(visionExpertMask(ids, t), (v) => BigInt(v));
  const rows = Array.from({ length: B }, (_, b) => p.inputIds.subarray(b * S, (b + 1) * S));
  const maskRows = Array.from({ length: B }, (_, b) => mask.subarray(b * S, (b + 1) * S));
  const pos = ernieRopeIndex(
    { inputIds: rows, attentionMask: maskRows, imageGridThw: p.imageGrids, videoGridThw: p.videoGrids },
    {
      imageTokenId: t.image,
      videoTokenId: t.video,
      ...(t.imageStart !== undefined ? { imageStartTokenId: t.imageStart } : {}),
      ...(t.videoStart !== undefined ? { videoStartTokenId: t.videoStart } : {}),
      spatialMergeSize: config.resampler.spatialMergeSize,
      temporalMergeSize: config.resampler.temporalMergeSize,
    },
    { videoTemporalAdvance: config.reference, dtype: 'int64' },
  );
  return {
    batch: B,
    seq: S,
    inputIds: p.inputIds,
    attentionMask: mask,
    imagePositions,
    videoPositions,
    moeTokenType: moe,
    positionIds: pos.positionIds as BigInt64Array,
    ropeDeltas: pos.mropePositionDeltas,
    realTokens,
  };
}

export function checkCount(kind: string, tokenId: number, found: number, grids: readonly Grid[]): void {
  const expected = grids.reduce((n, g) => n + g.tokens, 0);
  if (found === expected) return;
  const g = grids.map((x) => `[${x.thw.join(', ')}]`).join(', ') || 'none';
  throw new ModelError(
    'PLACEHOLDER_MISMATCH',
    `${kind} features and ${kind} tokens do not match: the prompt has ${found} ${kind} placeholder tokens (id ${tokenId}) but ${kind}_grid_thw (${g}) gives ${expected} features. Build the prompt with one placeholder per merged patch, as the processor does.`,
  );
}

/**
 * `mm_token_type_ids` is what HF's get_rope_index groups positions by; ours come from the ids. A value that
 * disagrees with the ids would give HF's model other positions than ours, so it is refused where it differs.
 */
export function checkTokenTypes(types: BigInt64Array, images: readonly number[], videos: readonly number[], S: number): void {
  const expected = new BigInt64Array(types.length);
  for (const i of images) expected[i] = 1n;
  for (const i of videos) expected[i] = 2n;
  const i = types.findIndex((v, j) => v !== expected[j]);
  if (i < 0) return;
  const what = ['a text token', 'an image placeholder', 'a video placeholder'][Number(expected[i])];
  throw new ModelError(
    'BAD_INPUT',
    `mm_token_type_ids[${Math.floor(i / S)}, ${i % S}] is ${types[i]} but input_ids there is ${what}: expected ${expected[i]} (0 text, 1 image, 2 video placeholder, as the processor makes them)`,
  );
}

/**
 * Placeholders under attention_mask 0. HF's get_rope_index drops masked tokens before it walks the grids, so a
 * masked image would take the next image's grid (and the error, if any, would name a later image in another
 * row); the features are still scattered into the masked places. Refused here, naming the image and its row.
 */
export function checkUnmasked(kind: string, positions: readonly number[], mask: BigInt64Array, S: number, grids: readonly Grid[]): void {
  const k = positions.findIndex((i) => mask[i] !== 1n);
  if (k < 0) return;
  // Placeholders are in grid order (row-major over the batch, as masked_scatter fills them).
  let image = 0;
  let end = grids[0]!.tokens;
  while (k >= end && image + 1 < grids.length) end += grids[++image]!.tokens;
  const i = positions[k]!;
  const [b, s] = [Math.floor(i / S), i % S];
  throw new ModelError(
    'BAD_INPUT',
    `attention_mask[${b}, ${s}] is 0 on a placeholder of ${kind} ${image} (batch ${b}): ${kind} placeholders must be attended (1); mask only padding`,
  );
}
