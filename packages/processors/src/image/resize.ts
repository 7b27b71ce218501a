import { ProcessorError } from '../errors.js';
import { DEFAULT_MAX_PIXELS } from './limits.js';

/**
 * Resampling filters, named as Pillow's `Image.Resampling`. HF's image
 * processors resample with BICUBIC (ERNIE-4.5-VL, LLaVA-NeXT / Granite 4
 * Vision) or BILINEAR (their default when a config names none).
 */
export type ResampleFilter = 'bicubic' | 'bilinear' | 'box' | 'hamming' | 'lanczos';

/** PIL's integer codes (preprocessor_config.json `resample`) for the filters above. */
export const PIL_RESAMPLE_CODES: Readonly<Record<number, ResampleFilter>> = {
  1: 'lanczos',
  2: 'bilinear',
  3: 'bicubic',
  4: 'box',
  5: 'hamming',
};

/** An 8-bit image, row-major with `channels` interleaved samples per pixel. */
export interface Uint8Image {
  readonly width: number;
  readonly height: number;
  readonly channels: number;
  readonly data: Uint8Array;
}

interface Filter {
  readonly fn: (x: number) => number;
  readonly support: number;
}

// Pillow src/libImaging/Resample.c: the filter kernels and their supports.
const FILTERS: Readonly<Record<ResampleFilter, Filter>> = {
  box: { fn: (x) => (x > -0.5 && x <= 0.5 ? 1.0 : 0.0), support: 0.5 },
  bilinear: {
    fn: (x) => {
      const ax = Math.abs(x);
      return ax < 1.0 ? 1.0 - ax : 0.0;
    },
    support: 1.0,
  },
  hamming: {
    fn: (x) => {
      let ax = Math.abs(x);
      if (ax === 0.0) return 1.0;
      if (ax >= 1.0) return 0.0;
      ax *= Math.PI;
      // 0.54f and 0.46f are float literals in Pillow.
      return (Math.sin(ax) / ax) * (Math.fround(0.54) + Math.fround(0.46) * Math.cos(ax));
    },
    support: 1.0,
  },
  bicubic: {
    // Keys' cubic convolution with a = -0.5, written as Pillow writes it (same rounding).
    fn: (x) => {
      const a = -0.5;
      const ax = Math.abs(x);
      if (ax < 1.0) return ((a + 2.0) * ax - (a + 3.0)) * ax * ax + 1;
      if (ax < 2.0) return (((ax - 5) * ax + 8) * ax - 4) * a;
      return 0.0;
    },
    support: 2.0,
  },
  lanczos: {
    fn: (x) => (-3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0),
    support: 3.0,
  },
};

function sinc(x: number): number {
  if (x === 0.0) return 1.0;
  const px = x * Math.PI;
  return Math.sin(px) / px;
}

/** Pillow's 8-bit fixed point: 8 bits of result, 2 of headroom for the negative lobes. */
const PRECISION_BITS = 32 - 8 - 2;
const HALF = 1 << (PRECISION_BITS - 1);

/** Per output pixel, the first input index, the tap count, and the taps in fixed point. */
interface Coeffs {
  readonly bounds: Int32Array;
  readonly ksize: number;
  readonly kk: Int32Array;
}

/**
 * Pillow Resample.c precompute_coeffs + normalize_coeffs_8bpc: the filter is
 * stretched by the downscale factor (antialiasing), each pixel's taps are
 * normalized to sum to 1 in double, then rounded half away from zero to
 * PRECISION_BITS fixed point. `in0`/`in1` are the box edges (float in Pillow).
 */
function precomputeCoeffs(inSize: number, in0: number, in1: number, outSize: number, filter: Filter): Coeffs {
  const scale = Math.fround(in1 - in0) / outSize;
  const filterscale = scale < 1.0 ? 1.0 : scale;
  const support = filter.support * filterscale;
  const ksize = Math.ceil(support) * 2 + 1;
  const bounds = new Int32Array(outSize * 2);
  const kk = new Int32Array(outSize * ksize);
  const k = new Float64Array(ksize);
  const invFilterscale = 1.0 / filterscale;
  for (let xx = 0; xx < outSize; xx++) {
    const center = in0 + (xx + 0.5) * scale;
    // (int) casts in C truncate toward zero.
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const xmax = Math.min(Math.trunc(center + support + 0.5), inSize) - xmin;
    let ww = 0.0;
    for (let x = 0; x < xmax; x++) {
      const w = filter.fn((x + xmin - center + 0.5) * invFilterscale);
      k[x] = w;
      ww += w;
    }
    for (let x = 0; x < ksize; x++) {
      const v = x < xmax ? (ww !== 0.0 ? k[x]! / ww : k[x]!) : 0;
      kk[xx * ksize + x] = v < 0 ? Math.trunc(-0.5 + v * (1 << PRECISION_BITS)) : Math.trunc(0.5 + v * (1 << PRECISION_BITS));
    }
    bounds[xx * 2] = xmin;
    bounds[xx * 2 + 1] = xmax;
  }
  return { bounds, ksize, kk };
}

/** Pillow's clip8: the accumulator's integer part, clamped to [0, 255]. */
function clip8(ss: number): number {
  const v = ss >> PRECISION_BITS;
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

/**
 * _ImagingResampleHorizontal_8bpc over input rows [offset, offset + outHeight).
 * The sums are exact integers (doubles hold them), so visiting taps and
 * channels in any order gives Pillow's int32 result.
 */
function horizontal(im: Uint8Image, outWidth: number, outHeight: number, offset: number, c: Coeffs): Uint8Image {
  const ch = im.channels;
  const src = im.data;
  const { bounds, kk, ksize } = c;
  const out = new Uint8Array(outWidth * outHeight * ch);
  const acc = new Float64Array(ch);
  for (let yy = 0; yy < outHeight; yy++) {
    const rowIn = (yy + offset) * im.width * ch;
    let o = yy * outWidth * ch;
    for (let xx = 0; xx < outWidth; xx++) {
      const xmax = bounds[xx * 2 + 1]!;
      const k0 = xx * ksize;
      acc.fill(HALF);
      let p = rowIn + bounds[xx * 2]! * ch;
      for (let x = 0; x < xmax; x++) {
        const k = kk[k0 + x]!;
        for (let b = 0; b < ch; b++) acc[b] = acc[b]! + src[p + b]! * k;
        p += ch;
      }
      for (let b = 0; b < ch; b++) out[o++] = clip8(acc[b]!);
    }
  }
  return { width: outWidth, height: outHeight, channels: ch, data: out };
}

/** _ImagingResampleVertical_8bpc, a whole output row at a time; `c.bounds` minus `shift` index the rows `im` holds. */
function vertical(im: Uint8Image, outHeight: number, c: Coeffs, shift: number): Uint8Image {
  const rowLen = im.width * im.channels;
  const src = im.data;
  const { bounds, kk, ksize } = c;
  const out = new Uint8Array(rowLen * outHeight);
  const acc = new Float64Array(rowLen);
  for (let yy = 0; yy < outHeight; yy++) {
    const ymin = bounds[yy * 2]! - shift;
    const ymax = bounds[yy * 2 + 1]!;
    acc.fill(HALF);
    for (let y = 0; y < ymax; y++) {
      const k = kk[yy * ksize + y]!;
      const row = (y + ymin) * rowLen;
      for (let i = 0; i < rowLen; i++) acc[i] = acc[i]! + src[row + i]! * k;
    }
    const o = yy * rowLen;
    for (let i = 0; i < rowLen; i++) out[o + i] = clip8(acc[i]!);
  }
  return { width: im.width, height: outHeight, channels: im.channels, data: out };
}

/** Pillow ImagingResampleInner for the box (0, 0, width, height): horizontal pass, then vertical. */
function resampleInner(im: Uint8Image, width: number, height: number, filter: Filter): Uint8Image {
  const needHorizontal = width !== im.width;
  const needVertical = height !== im.height;
  const vert = precomputeCoeffs(im.height, 0, im.height, height, filter);
  // Only the input rows the vertical pass reads go through the horizontal pass.
  const yFirst = vert.bounds[0]!;
  const yLast = vert.bounds[height * 2 - 2]! + vert.bounds[height * 2 - 1]!;
  let cur = im;
  let shift = 0;
  if (needHorizontal) {
    const horiz = precomputeCoeffs(im.width, 0, im.width, width, filter);
    cur = horizontal(im, width, yLast - yFirst, yFirst, horiz);
    shift = yFirst;
  }
  if (needVertical) cur = vertical(cur, height, vert, shift);
  return cur === im ? { ...im, data: im.data.slice() } : cur;
}

/**
 * Pillow 12 `Image.resize((width, height), filter)` on an 8-bit image without
 * alpha (L, RGB), byte for byte: box = the whole image, no `reducing_gap` (HF's
 * image_transforms.resize passes None), a same-size resize is a copy, and an
 * image more than 100 times taller than wide that shrinks vertically is
 * resampled vertically first, as Image.resize does. A target of more pixels
 * than DEFAULT_MAX_PIXELS (Pillow's decompression-bomb limit) is refused before
 * anything is allocated.
 */
export function resize(im: Uint8Image, width: number, height: number, filter: ResampleFilter = 'bicubic'): Uint8Image {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new ProcessorError('INVALID_SIZE', `resize: the target size must be positive integers, got ${width}x${height}.`);
  }
  if (width * height > DEFAULT_MAX_PIXELS) {
    throw new ProcessorError(
      'INVALID_SIZE',
      `resize: a ${width}x${height} target is ${width * height} pixels, more than ${DEFAULT_MAX_PIXELS}; ` +
        'check the size settings of the processor config.',
    );
  }
  if (im.width < 1 || im.height < 1 || im.data.length !== im.width * im.height * im.channels) {
    throw new ProcessorError(
      'INVALID_SIZE',
      `resize: a ${im.width}x${im.height}x${im.channels} image needs ${im.width * im.height * im.channels} bytes, got ${im.data.length}.`,
    );
  }
  const f = FILTERS[filter];
  if (width === im.width && height === im.height) return { ...im, data: im.data.slice() };
  if (im.height > im.width * 100 && height < im.height) {
    const tall = resampleInner(im, im.width, height, f);
    return resampleInner(tall, width, height, f);
  }
  return resampleInner(im, width, height, f);
}
