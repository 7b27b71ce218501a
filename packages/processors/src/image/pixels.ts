import type { ConfigObject } from '@vlmkit/config';
import { PIL_RESAMPLE_CODES, type ResampleFilter, type Uint8Image } from './resize.js';

/** HF image_utils OPENAI_CLIP_MEAN / OPENAI_CLIP_STD: the defaults of both image processors here. */
export const OPENAI_CLIP_MEAN: readonly [number, number, number] = [0.48145466, 0.4578275, 0.40821073];
export const OPENAI_CLIP_STD: readonly [number, number, number] = [0.26862954, 0.26130258, 0.27577711];

/**
 * The pixel settings every image and video processor here reads (readResample, readNormalization) and
 * `do_convert_rgb`, which vlmkit always applies: one list for the readers' null checks.
 */
export const PIXEL_SETTING_KEYS = [
  'resample',
  'do_rescale',
  'rescale_factor',
  'do_normalize',
  'image_mean',
  'image_std',
  'do_convert_rgb',
] as const;

/** The rescale and normalize steps of an HF image processor (`do_rescale`, `rescale_factor`, `do_normalize`, ...). */
export interface PixelNormalization {
  readonly doRescale: boolean;
  readonly rescaleFactor: number;
  readonly doNormalize: boolean;
  readonly imageMean: readonly [number, number, number];
  readonly imageStd: readonly [number, number, number];
}

/**
 * Reads the normalization fields of preprocessor_config.json with the image processor class's defaults
 * (OpenAI CLIP's mean and std for every processor here).
 */
export function readNormalization(
  c: ConfigObject,
  from: string,
  defaults: { imageMean: readonly number[]; imageStd: readonly number[] } = { imageMean: OPENAI_CLIP_MEAN, imageStd: OPENAI_CLIP_STD },
): PixelNormalization {
  const triple = (key: string, d: readonly number[]): [number, number, number] => {
    if (!c.has(key)) return [d[0]!, d[1]!, d[2]!];
    const v = c.raw(key);
    // HF accepts a single float for all channels (image_transforms.normalize).
    if (typeof v === 'number') {
      const x = c.num(key);
      return [x, x, x];
    }
    if (!Array.isArray(v) || v.length !== 3 || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      c.fail('INVALID_CONFIG', key, 'must be a number or a list of 3 numbers (one per RGB channel).');
    }
    return [v[0], v[1], v[2]];
  };
  return {
    doRescale: c.bool('do_rescale', { default: true, from }),
    rescaleFactor: c.num('rescale_factor', { default: 1 / 255, from }),
    doNormalize: c.bool('do_normalize', { default: true, from }),
    imageMean: triple('image_mean', defaults.imageMean),
    imageStd: triple('image_std', defaults.imageStd),
  };
}

/** `resample` as a PIL code (3 = BICUBIC, ...), with the processor's default. */
export function readResample(c: ConfigObject, fallback: ResampleFilter): ResampleFilter {
  if (!c.has('resample')) return fallback;
  const code = c.int('resample', { min: 0 });
  const filter = PIL_RESAMPLE_CODES[code];
  if (filter === undefined) {
    if (code === 0) c.fail('UNSUPPORTED_CONFIG', 'resample', '0 (PIL NEAREST) is not supported; use 2 (BILINEAR) or 3 (BICUBIC).');
    c.fail('INVALID_CONFIG', 'resample', `${code} is not a PIL resampling filter (0 to 5; HF refuses it); use 2 or 3 (BICUBIC).`);
  }
  return filter;
}

/**
 * Writes an 8-bit RGB image as float32 CHW into `out` at `offset`, with HF's
 * numpy arithmetic: rescale in float64 then cast to float32
 * (image_transforms.rescale), normalize in float32 against float32 mean/std
 * (image_transforms.normalize). Every step is one correctly rounded float32
 * operation, so the values are HF's bit for bit.
 */
export function writeNormalizedChw(im: Uint8Image, n: PixelNormalization, out: Float32Array, offset: number): void {
  const plane = im.width * im.height;
  const f = Math.fround;
  for (let c = 0; c < 3; c++) {
    const mean = f(n.imageMean[c]!);
    const std = f(n.imageStd[c]!);
    const lut = new Float32Array(256);
    for (let v = 0; v < 256; v++) {
      let x = n.doRescale ? f(v * n.rescaleFactor) : v;
      if (n.doNormalize) x = f(f(x - mean) / std);
      lut[v] = x;
    }
    const base = offset + c * plane;
    for (let i = 0; i < plane; i++) out[base + i] = lut[im.data[i * im.channels + c]!]!;
  }
}

/** A crop of an 8-bit image (rows [top, top + height), columns [left, left + width)), zero outside it. */
export function crop(im: Uint8Image, top: number, left: number, height: number, width: number): Uint8Image {
  const ch = im.channels;
  const data = new Uint8Array(width * height * ch);
  for (let y = 0; y < height; y++) {
    const sy = top + y;
    if (sy < 0 || sy >= im.height) continue;
    for (let x = 0; x < width; x++) {
      const sx = left + x;
      if (sx < 0 || sx >= im.width) continue;
      for (let b = 0; b < ch; b++) data[(y * width + x) * ch + b] = im.data[(sy * im.width + sx) * ch + b]!;
    }
  }
  return { width, height, channels: ch, data };
}
