import { ernieRopeIndex, type GridThw } from '@vlmkit/mrope';
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
  /** HF `moe_mm_token_type_ids`, when the caller has it; computed from the ids otherwise. */
  moeTokenType?: BigInt64Array | undefined;
}

/** Placeholders each grid expands to: images t*h*w/m^2, videos (t/temporal)*h*w/m^2 (vLLM and HF agree). */
export function placeholderCount(grids: readonly GridThw[], config: Ernie45VLConfig, video: boolean): number {
  const m = config.resampler.spatialMergeSize;
  const tm = config.resampler.temporalMergeSize;
  return grids.reduce((n, [t, h, w]) => n + ((video ? t / tm : t) * h * w) / (m * m), 0);
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
  checkCount('image', t.image, imagePositions.length, placeholderCount(p.imageGrids, config, false), p.imageGrids);
  checkCount('video', t.video, videoPositions.length, placeholderCount(p.videoGrids, config, true), p.videoGrids);

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

function checkCount(kind: string, tokenId: number, found: number, expected: number, grids: readonly GridThw[]): void {
  if (found === expected) return;
  const g = grids.map((x) => `[${x.join(', ')}]`).join(', ') || 'none';
  throw new ModelError(
    'PLACEHOLDER_MISMATCH',
    `${kind} features and ${kind} tokens do not match: the prompt has ${found} ${kind} placeholder tokens (id ${tokenId}) but ${kind}_grid_thw (${g}) gives ${expected} features. Build the prompt with one placeholder per merged patch, as the processor does.`,
  );
}
