// Qwen2-VL's image processor (HF Qwen2VLImageProcessorPil), which Qwen2.5-VL and Qwen3-VL use: smart_resize to
// multiples of patch_size * merge_size, rescale and normalize, patch rows of (channel, frame, row, column) with the
// image repeated temporal_patch_size times. The steps are ERNIE's (HF's ERNIE processor was derived from it), so
// only the settings differ: defaults, and the min_pixels / max_pixels keys that override size.
import { fields } from '@vlmkit/config';
import { MAX_PROCESSED_PIXELS, refuseNullSettings, type SettingsSource } from '../errors.js';
import type { RgbImage } from '../image/decode.js';
import { type ErnieImageInputs, type ErnieImageProcessorConfig, processErnieImages } from '../image/ernie.js';
import { PIXEL_SETTING_KEYS, readNormalization, readResample } from '../image/pixels.js';

/** Qwen2VLImageProcessor's settings: ERNIE's fields (patch rows are laid out the same way). */
export type Qwen2VLImageProcessorConfig = ErnieImageProcessorConfig;

const FROM = 'HF Qwen2VLImageProcessor';

/**
 * Reads Qwen2VLImageProcessor settings: preprocessor_config.json, or the `image_processor` object HF's
 * save_pretrained nests in processor_config.json (`source` names which, for errors), with the class defaults
 * (patch 14, merge 2, temporal patch 2, 56*56..28*28*1280 pixels, OpenAI CLIP mean/std; Qwen3-VL's files set
 * patch 16 and mean/std 0.5). `min_pixels` / `max_pixels`, when present, replace `size.shortest_edge` /
 * `size.longest_edge` as HF's constructor does. `model` names the processor in errors.
 */
export function qwen2vlImageProcessorConfig(
  json: unknown,
  source: SettingsSource = { file: 'preprocessor_config.json' },
  model = 'Qwen2-VL',
): Qwen2VLImageProcessorConfig {
  const c = fields(json, `${model} ${source.file}`, source.key);
  refuseNullSettings(c, ['patch_size', 'merge_size', 'temporal_patch_size', 'size', 'do_resize', ...PIXEL_SETTING_KEYS]);
  const pixels = { max: MAX_PROCESSED_PIXELS };
  const size = c.optionalObj('size');
  let minPixels = size?.has('shortest_edge') ? size.int('shortest_edge', pixels) : undefined;
  let maxPixels = size?.has('longest_edge') ? size.int('longest_edge', pixels) : undefined;
  if (size === undefined) [minPixels, maxPixels] = [56 * 56, 28 * 28 * 1280];
  minPixels = c.optionalInt('min_pixels', pixels) ?? minPixels;
  maxPixels = c.optionalInt('max_pixels', pixels) ?? maxPixels;
  if (minPixels === undefined || maxPixels === undefined) {
    // Qwen2VLImageProcessorPil.resize raises for any other size dict ({height, width}, ...).
    return c.fail(
      'INVALID_CONFIG',
      'size',
      `must have shortest_edge and longest_edge (the fewest and most pixels, HF smart_resize), found keys ${JSON.stringify(Object.keys(size?.json ?? {}))}.`,
    );
  }
  return {
    patchSize: c.int('patch_size', { default: 14, from: FROM, max: 256 }),
    mergeSize: c.int('merge_size', { default: 2, from: FROM, max: 8 }),
    temporalPatchSize: c.int('temporal_patch_size', { default: 2, from: FROM, max: 16 }),
    minPixels,
    maxPixels,
    doResize: c.bool('do_resize', { default: true, from: FROM }),
    resample: readResample(c, 'bicubic'),
    normalization: readNormalization(c, FROM),
    model,
  };
}

/**
 * Qwen2VLImageProcessorPil._preprocess: per image, smart_resize (PIL resample in uint8), rescale, normalize,
 * patchify in merge-window order, each row (channel, temporal copy, row, column); images concatenated.
 */
export function processQwen2VLImages(images: readonly RgbImage[], config: Qwen2VLImageProcessorConfig): ErnieImageInputs {
  return processErnieImages(images, config);
}
