import { fields } from '@vlmkit/config';
import { MAX_PROCESSED_PIXELS, ProcessorError, refuseNullSettings, type SettingsSource } from '../errors.js';
import type { RgbImage } from './decode.js';
import { PIXEL_SETTING_KEYS, type PixelNormalization, readNormalization, readResample, writeNormalizedChw } from './pixels.js';
import { type ResampleFilter, resize } from './resize.js';

/** What Ernie4_5_VLMoeImageProcessor reads from preprocessor_config.json. */
export interface ErnieImageProcessorConfig {
  /** ViT patch side in pixels (`patch_size`, 14). */
  readonly patchSize: number;
  /** Patches merged per side by the resampler (`merge_size`, 2); sizes are multiples of patchSize * mergeSize. */
  readonly mergeSize: number;
  /** Frames per temporal patch (`temporal_patch_size`, 1 for images): each patch is repeated this many times. */
  readonly temporalPatchSize: number;
  /** Fewest / most pixels after resizing (`size.shortest_edge` / `size.longest_edge`, as HF names them). */
  readonly minPixels: number;
  readonly maxPixels: number;
  readonly doResize: boolean;
  readonly resample: ResampleFilter;
  readonly normalization: PixelNormalization;
  /** The model errors name (default 'ERNIE'): Qwen2-VL's image processor, which Qwen3-VL uses, works the same way. */
  readonly model?: string;
}

const FROM = 'HF Ernie4_5_VLMoeImageProcessor';

/** The keys this reader reads (and `do_convert_rgb`, which vlmkit always applies). */
const ERNIE_KEYS = ['patch_size', 'merge_size', 'temporal_patch_size', 'size', 'do_resize', ...PIXEL_SETTING_KEYS] as const;

/**
 * Reads ERNIE-4.5-VL image processor settings: preprocessor_config.json, or the `image_processor`
 * object HF's save_pretrained nests in processor_config.json (`source` names which, for errors).
 * Throws ConfigError naming the field. Beyond HF's own checks, sizes past MAX_PROCESSED_PIXELS
 * (and patch / merge sizes that would round an image up past it) are refused before any image
 * is touched.
 */
export function ernieImageProcessorConfig(
  json: unknown,
  source: SettingsSource = { file: 'preprocessor_config.json' },
): ErnieImageProcessorConfig {
  const c = fields(json, `ERNIE ${source.file}`, source.key);
  refuseNullSettings(c, ERNIE_KEYS);
  const size = c.optionalObj('size');
  if (size !== undefined && (!size.has('shortest_edge') || !size.has('longest_edge'))) {
    // Ernie4_5_VLMoeImageProcessor.resize raises for any other size dict ({height, width}, ...).
    c.fail(
      'INVALID_CONFIG',
      'size',
      `must have shortest_edge and longest_edge (the fewest and most pixels, HF smart_resize), found keys ${JSON.stringify(Object.keys(size.json))}.`,
    );
  }
  const pixels = { max: MAX_PROCESSED_PIXELS };
  return {
    patchSize: c.int('patch_size', { default: 14, from: FROM, max: 256 }),
    mergeSize: c.int('merge_size', { default: 2, from: FROM, max: 8 }),
    temporalPatchSize: c.int('temporal_patch_size', { default: 1, from: FROM, max: 16 }),
    minPixels: size ? size.int('shortest_edge', pixels) : 56 * 56,
    maxPixels: size ? size.int('longest_edge', pixels) : 28 * 28 * 6177,
    doResize: c.bool('do_resize', { default: true, from: FROM }),
    resample: readResample(c, 'bicubic'),
    normalization: readNormalization(c, FROM),
  };
}

/** Python's round() (and NumPy's): halves go to the even neighbour. */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * HF smart_resize (ernie4_5_vl_moe, as Qwen2-VL's): the [height, width] nearest
 * the image's that are multiples of `factor` with a pixel count in
 * [minPixels, maxPixels], keeping the aspect ratio as closely as possible.
 * `what` names the image (or video frames) and `model` the processor in the error for an aspect ratio over 200.
 */
export function ernieSmartResize(
  height: number,
  width: number,
  factor: number,
  minPixels: number,
  maxPixels: number,
  what = 'image',
  model = 'ERNIE',
): [number, number] {
  if (Math.max(height, width) / Math.min(height, width) > 200) {
    throw new ProcessorError(
      'INVALID_SIZE',
      `${model} processor: ${what}: ${width}x${height}, an aspect ratio over 200 (HF smart_resize refuses it); crop or pad it first.`,
    );
  }
  let hBar = roundHalfEven(height / factor) * factor;
  let wBar = roundHalfEven(width / factor) * factor;
  if (hBar * wBar > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    hBar = Math.max(factor, Math.floor(height / beta / factor) * factor);
    wBar = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (hBar * wBar < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    hBar = Math.ceil((height * beta) / factor) * factor;
    wBar = Math.ceil((width * beta) / factor) * factor;
  }
  return [hBar, wBar];
}

/** The model inputs for a list of images, named and laid out as HF's processor returns them. */
export interface ErnieImageInputs {
  /** [sum of patches, 3 * temporalPatchSize * patchSize^2] float32, row-major. */
  readonly pixelValues: Float32Array;
  readonly pixelValuesShape: readonly [number, number];
  /** Per image [t, h, w] in patches: [1, height / patchSize, width / patchSize]. */
  readonly imageGridThw: readonly (readonly [number, number, number])[];
}

/**
 * Ernie4_5_VLMoeImageProcessorPil._preprocess: per image, smart_resize to
 * multiples of patchSize * mergeSize (PIL resample in uint8), rescale,
 * normalize, then patchify: patches ordered by merge window
 * (window row, window column, row in window, column in window), each patch's
 * values by (channel, frame, row, column). Patches of all images are
 * concatenated.
 */
export function processErnieImages(images: readonly RgbImage[], config: ErnieImageProcessorConfig): ErnieImageInputs {
  const { patchSize: p, mergeSize: m, temporalPatchSize: tps } = config;
  const dim = 3 * tps * p * p;
  const names = images.map((image, i) => `image ${image.name ?? i}`);
  const resized = images.map((image, i) => {
    const im = { ...image, channels: 3 };
    if (!config.doResize) return im;
    const [h, w] = ernieSmartResize(im.height, im.width, p * m, config.minPixels, config.maxPixels, names[i], config.model);
    return resize(im, w, h, config.resample);
  });
  const grids = resized.map((im, i) => {
    if (im.height % (p * m) !== 0 || im.width % (p * m) !== 0) {
      throw new ProcessorError(
        'INVALID_SIZE',
        `${config.model ?? 'ERNIE'} image processor: ${names[i]}: ${im.width}x${im.height} is not a multiple of patch_size * merge_size = ${p * m}; enable do_resize.`,
      );
    }
    return [1, im.height / p, im.width / p] as const;
  });
  const total = grids.reduce((a, g) => a + g[1] * g[2], 0);
  const pixelValues = new Float32Array(total * dim);
  let row = 0;
  resized.forEach((im, i) => {
    const chw = new Float32Array(3 * im.width * im.height);
    writeNormalizedChw(im, config.normalization, chw, 0);
    const [, gh, gw] = grids[i]!;
    for (let bh = 0; bh < gh / m; bh++) {
      for (let bw = 0; bw < gw / m; bw++) {
        for (let mh = 0; mh < m; mh++) {
          for (let mw = 0; mw < m; mw++) {
            let o = row * dim;
            for (let c = 0; c < 3; c++) {
              for (let t = 0; t < tps; t++) {
                for (let py = 0; py < p; py++) {
                  const y = (bh * m + mh) * p + py;
                  const src = (c * im.height + y) * im.width + (bw * m + mw) * p;
                  pixelValues.set(chw.subarray(src, src + p), o);
                  o += p;
                }
              }
            }
            row++;
          }
        }
      }
    }
  });
  return { pixelValues, pixelValuesShape: [total, dim], imageGridThw: grids };
}
