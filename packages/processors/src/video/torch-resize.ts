import type { Uint8Image } from '../image/resize.js';

/**
 * torchvision's `resize(uint8 tensor, antialias=True, BICUBIC)` on CPU, which HF's torchvision-backed
 * video processors call (TorchvisionBackend.resize). It runs ATen's native uint8 path
 * (aten/src/ATen/native/cpu/UpSampleKernel.cpp + UpSampleKernelAVXAntialias.h, a port of
 * Pillow-SIMD): PIL's separable antialiased filter, but the weights are rounded to int16 with a
 * precision chosen from the largest weight, not PIL's fixed 22 bits, so it differs from PIL's
 * resize by one level on some pixels. Width first, then height, uint8 in between.
 */
export function torchResizeBicubicUint8(im: Uint8Image, width: number, height: number): Uint8Image {
  // torchvision resize_image: the same size returns the input untouched.
  if (width === im.width && height === im.height) return im;
  let out = im;
  if (width !== im.width) out = horizontal(out, width);
  if (height !== im.height) out = vertical(out, height);
  return out;
}

/** HelperInterpCubic::aa_filter: Keys' cubic convolution with a = -0.5 (cubic_convolution1/2). */
function cubic(x: number): number {
  const a = -0.5;
  x = Math.abs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

interface Taps {
  /** Per output index: first input index and number of taps. */
  min: Int32Array;
  size: Int32Array;
  /** Per output index, `stride` int16 weights (as integers). */
  weights: Int32Array;
  stride: number;
  precision: number;
}

/**
 * HelperInterpBase::_compute_index_ranges_int16_weights (antialias, align_corners=False), in double:
 * PIL's support and centering, weights normalized per output, then scaled by 2^precision with the
 * precision the largest weight allows in int16, rounded half away from zero.
 */
function taps(inSize: number, outSize: number): Taps {
  const scale = inSize / outSize;
  const support = scale >= 1 ? 2 * scale : 2;
  const stride = Math.ceil(support) * 2 + 1;
  const invscale = scale >= 1 ? 1 / scale : 1;
  const min = new Int32Array(outSize);
  const size = new Int32Array(outSize);
  const w = new Float64Array(outSize * stride);
  let wtMax = 0;
  for (let i = 0; i < outSize; i++) {
    const center = scale * (i + 0.5);
    // static_cast<int64_t> truncates toward zero.
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const xsize = Math.min(Math.max(Math.min(Math.trunc(center + support + 0.5), inSize) - xmin, 0), stride);
    let total = 0;
    for (let j = 0; j < xsize; j++) {
      const v = cubic((j + xmin - center + 0.5) * invscale);
      w[i * stride + j] = v;
      total += v;
    }
    if (total !== 0) {
      for (let j = 0; j < xsize; j++) {
        w[i * stride + j]! /= total;
        wtMax = Math.max(wtMax, w[i * stride + j]!);
      }
    }
    min[i] = xmin;
    size[i] = xsize;
  }
  let precision = 0;
  for (; precision < 22; precision++) {
    if (Math.trunc(0.5 + wtMax * 2 ** (precision + 1)) >= 1 << 15) break;
  }
  const weights = new Int32Array(outSize * stride);
  for (let k = 0; k < w.length; k++) {
    const v = w[k]! * 2 ** precision;
    weights[k] = v < 0 ? Math.trunc(-0.5 + v) : Math.trunc(0.5 + v);
  }
  return { min, size, weights, stride, precision };
}

/** Integer dot product plus half an LSB, shifted down, saturated to uint8 (the AVX kernels' srai + packus). */
function clampShift(sum: number, precision: number): number {
  const v = Math.floor(sum / 2 ** precision);
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

function horizontal(im: Uint8Image, width: number): Uint8Image {
  const t = taps(im.width, width);
  const C = im.channels;
  const data = new Uint8Array(width * im.height * C);
  const half = t.precision > 0 ? 2 ** (t.precision - 1) : 0;
  for (let y = 0; y < im.height; y++) {
    const row = y * im.width * C;
    for (let x = 0; x < width; x++) {
      const k = x * t.stride;
      for (let c = 0; c < C; c++) {
        let sum = half;
        for (let j = 0; j < t.size[x]!; j++) sum += im.data[row + (t.min[x]! + j) * C + c]! * t.weights[k + j]!;
        data[(y * width + x) * C + c] = clampShift(sum, t.precision);
      }
    }
  }
  return { width, height: im.height, channels: C, data };
}

function vertical(im: Uint8Image, height: number): Uint8Image {
  const t = taps(im.height, height);
  const C = im.channels;
  const rowLen = im.width * C;
  const data = new Uint8Array(im.width * height * C);
  const half = t.precision > 0 ? 2 ** (t.precision - 1) : 0;
  for (let y = 0; y < height; y++) {
    const k = y * t.stride;
    for (let i = 0; i < rowLen; i++) {
      let sum = half;
      for (let j = 0; j < t.size[y]!; j++) sum += im.data[(t.min[y]! + j) * rowLen + i]! * t.weights[k + j]!;
      data[y * rowLen + i] = clampShift(sum, t.precision);
    }
  }
  return { width: im.width, height, channels: C, data };
}
