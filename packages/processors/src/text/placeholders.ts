import { Grid } from '@vlmkit/config';
import { ProcessorError } from '../errors.js';

/** One modality's placeholder token and, per item in prompt order, how many times it must repeat. */
export interface PlaceholderExpansion {
  /** 'image' | 'video': named in errors. */
  modality: string;
  /** The placeholder's text, e.g. `<|IMAGE_PLACEHOLDER|>` or `<image>`. */
  token: string;
  /** Tokens per item: the i-th occurrence of `token` becomes `token` repeated `counts[i]` times. */
  counts: readonly number[];
  /** Per item, the whole text that replaces its placeholder where it is more than the token repeated (timestamped videos). */
  replacements?: readonly string[];
}

/**
 * Expands each media placeholder of the prompt into as many copies as the model has features for
 * that image or video, as HF ProcessorMixin.get_text_with_replacements does: one left-to-right
 * scan over all modalities' tokens, the n-th occurrence of a modality's token taking that
 * modality's n-th count. A modality without items is left alone (HF builds no pattern for it).
 * Unlike HF, the number of placeholders must equal the number of items: HF raises on too many and
 * only fails later, in the model, on too few.
 */
export function expandPlaceholders(text: string, expansions: readonly PlaceholderExpansion[]): string {
  const active = expansions.filter((e) => e.counts.length > 0);
  if (active.length === 0) return text;
  const next = active.map(() => 0);
  let out = '';
  let last = 0;
  for (;;) {
    // The leftmost occurrence of any active token; at equal positions the earlier modality wins (regex alternation order).
    let at = -1;
    let which = -1;
    active.forEach((e, i) => {
      const j = text.indexOf(e.token, last);
      if (j !== -1 && (at === -1 || j < at)) {
        at = j;
        which = i;
      }
    });
    if (which === -1) break;
    const e = active[which]!;
    const n = next[which]!;
    if (n >= e.counts.length) {
      throw new ProcessorError(
        'INVALID_INPUT',
        `the prompt has more ${e.modality} placeholders (${e.token}) than ${e.modality}s given (${e.counts.length})`,
      );
    }
    out += text.slice(last, at) + (e.replacements?.[n] ?? e.token.repeat(e.counts[n]!));
    next[which] = n + 1;
    last = at + e.token.length;
  }
  active.forEach((e, i) => {
    if (next[i]! < e.counts.length) {
      throw new ProcessorError(
        'INVALID_INPUT',
        `${e.counts.length} ${e.modality}s given but the prompt has ${next[i]} ${e.modality} placeholder(s) (${e.token}): ` +
          `put one ${e.token} where each ${e.modality} goes, or build the prompt with applyChatTemplate and { type: '${e.modality}' } parts`,
      );
    }
  });
  return out + text.slice(last);
}

/** A grid the processor made, counted by the one grid rule (@vlmkit/config `Grid`). */
function ernieGrid(gridThw: readonly number[], name: string, spatial: number, temporal: number): Grid {
  return Grid.of(gridThw, name, { spatial, temporal }, (message) => new ProcessorError('INVALID_INPUT', message));
}

/** ERNIE image tokens: one per merge x merge patches of the grid (HF Ernie4_5_VLMoeProcessor.replace_image_token). */
export function ernieImageTokenCount(gridThw: readonly number[], mergeSize: number): number {
  return ernieGrid(gridThw, 'image_grid_thw', mergeSize, 1).tokens;
}

/**
 * ERNIE video tokens: one per merge x merge patches of temporal_patch_size frames
 * (HF Ernie4_5_VLMoeProcessor.replace_video_token).
 */
export function ernieVideoTokenCount(gridThw: readonly number[], mergeSize: number, temporalPatchSize: number): number {
  return ernieGrid(gridThw, 'video_grid_thw', mergeSize, temporalPatchSize).tokens;
}

/** The settings of HF Granite4VisionProcessor that decide an image's token count. */
export interface GraniteTokenCountConfig {
  /** Vision tower patch size (processor `patch_size`). */
  patchSize: number;
  /** `'default'` drops one token (the CLS feature); `'full'` keeps all. */
  visionFeatureSelectStrategy: string;
  /** Fraction of patches per side the projector keeps, e.g. `'1/4'` (processor `downsample_rate`); undefined = 1. */
  downsampleRate?: string | undefined;
  /** Extra tokens per image (processor `num_additional_image_tokens`, default 0). */
  numAdditionalImageTokens?: number;
}

/** `Fraction("1/4")` as [numerator, denominator]. */
function parseFraction(s: string): [number, number] {
  const m = /^\s*(\d+)\s*(?:\/\s*(\d+))?\s*$/.exec(s);
  if (m === null || Number(m[2] ?? 1) === 0)
    throw new ProcessorError('INVALID_PROCESSOR_CONFIG', `downsample_rate '${s}' is not a fraction like '1/4'`);
  return [Number(m[1]), Number(m[2] ?? 1)];
}

/**
 * Image tokens of a Granite 4 Vision (LlavaNext anyres) image, as HF
 * Granite4VisionProcessor._get_number_of_features counts them: the base tile's features, plus the
 * best-fit grid of tiles unpadded back to the image's aspect ratio with one newline token per row.
 * `imageSize` is the original [height, width]; `bestResolution` the pinpoint it was fitted to
 * (select_best_resolution); `tileSize` the processed tile [height, width].
 */
export function graniteImageTokenCount(
  imageSize: readonly [number, number],
  bestResolution: readonly [number, number],
  tileSize: readonly [number, number],
  config: GraniteTokenCountConfig,
): number {
  const [origH, origW] = imageSize;
  const [height, width] = tileSize;
  const scaleH = Math.floor(bestResolution[0] / height);
  const scaleW = Math.floor(bestResolution[1] / width);
  let patchesH = Math.floor(height / config.patchSize);
  let patchesW = Math.floor(width / config.patchSize);
  if (config.downsampleRate !== undefined) {
    // int(patches * Fraction(rate)): exact rational arithmetic, truncated.
    const [num, den] = parseFraction(config.downsampleRate);
    patchesH = Math.floor((patchesH * num) / den);
    patchesW = Math.floor((patchesW * num) / den);
  }
  // _get_unpadded_features
  let currentH = patchesH * scaleH;
  let currentW = patchesW * scaleW;
  // Python int(round(x, 7)): rounding to 7 decimals first makes 23.9999999999 count as 24.
  const round7 = (x: number) => Math.trunc(Math.round(x * 1e7) / 1e7);
  if (origW / origH > currentW / currentH) {
    const newH = round7(origH * (currentW / origW));
    currentH -= Math.floor((currentH - newH) / 2) * 2;
  } else {
    const newW = round7(origW * (currentH / origH));
    currentW -= Math.floor((currentW - newW) / 2) * 2;
  }
  const unpadded = currentH * currentW;
  const newlines = currentH;
  const base = patchesH * patchesW + (config.numAdditionalImageTokens ?? 0);
  const total = unpadded + newlines + base;
  return config.visionFeatureSelectStrategy === 'default' ? total - 1 : total;
}

/** Marks each id of `inputIds` with the type of the last `[id, type]` rule naming it (HF's successive masked assignments), else 0. */
function markTypes(inputIds: ArrayLike<number | bigint>, rules: readonly [number | undefined, bigint][]): BigInt64Array {
  const type = new Map<number, bigint>();
  for (const [id, t] of rules) if (id !== undefined) type.set(id, t);
  const out = new BigInt64Array(inputIds.length);
  for (let i = 0; i < inputIds.length; i++) out[i] = type.get(Number(inputIds[i])) ?? 0n;
  return out;
}

/**
 * HF ProcessorMixin.create_mm_token_type_ids: 0 text, 1 image placeholder, 2 video placeholder
 * (the processor's image_token_ids / video_token_ids: the placeholder ids only).
 */
export function mmTokenTypeIds(inputIds: ArrayLike<number | bigint>, placeholders: { image?: number; video?: number }): BigInt64Array {
  return markTypes(inputIds, [
    [placeholders.image, 1n],
    [placeholders.video, 2n],
  ]);
}

/**
 * HF Ernie4_5_VLMoeProcessor.create_moe_mm_token_type_ids: as mmTokenTypeIds, but the start and end
 * tokens around an image (video) also go to the vision experts, so they are typed 1 (2) too.
 */
export function moeMmTokenTypeIds(
  inputIds: ArrayLike<number | bigint>,
  tokens: { image?: number; imageStart?: number; imageEnd?: number; video?: number; videoStart?: number; videoEnd?: number },
): BigInt64Array {
  // In HF's order: placeholders, then image start/end, then video start/end.
  return markTypes(inputIds, [
    [tokens.image, 1n],
    [tokens.video, 2n],
    [tokens.imageStart, 1n],
    [tokens.imageEnd, 1n],
    [tokens.videoStart, 2n],
    [tokens.videoEnd, 2n],
  ]);
}
