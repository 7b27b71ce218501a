import { f16ToF32 } from '@vlmkit/safetensors';
import type { QuantizedBlocks, QuantizeOptions } from './quant.js';

/**
 * The block quantizer's inner loops (`quantizeBlockwise` in quant.ts states the scheme and the layouts). A first
 * quantized load runs every decoder weight of the checkpoint through here, so the loops are written for
 * throughput: one reused row buffer (the checkpoint's 16-bit floats widened a row at a time, never the whole
 * weight as float32), the last partial block padded with zeros in that buffer (a zero leaves the block's range
 * and largest magnitude as they are and takes the zero point's code, as the padding must), and 4-bit codes packed
 * two at a time with integer ops. The results are bit for bit those of the straightforward loop the tests keep
 * as reference: the same float64 expressions in the same order, and a NaN code (a block holding an infinity)
 * becomes 0 through `|` as it did through a Uint8Array store.
 */

/** Where a weight's rows come from: float32 values, or the bit patterns of 16-bit floats. */
export type RowSource =
  | { readonly dtype: 'float32'; readonly data: Float32Array }
  | { readonly dtype: 'bfloat16' | 'float16'; readonly data: Uint16Array };

/** Quantizes W [N, K] read row by row from `src` (row-major). */
export function quantizeRows(
  src: RowSource,
  n: number,
  k: number,
  o: Pick<QuantizeOptions, 'bits' | 'blockSize' | 'symmetric'>,
): QuantizedBlocks {
  const { bits, blockSize, symmetric } = o;
  const kBlocks = Math.ceil(k / blockSize);
  const blobSize = (blockSize * bits) / 8;
  const zpRow = Math.ceil((kBlocks * bits) / 8);
  const packed = new Uint8Array(n * kBlocks * blobSize);
  const scales = new Float32Array(n * kBlocks);
  const zeroPoints = symmetric ? undefined : new Uint8Array(n * zpRow);
  // Past K the buffer stays zero: the padding of the last block.
  const row = new Float32Array(kBlocks * blockSize);
  const rowBits = new Uint32Array(row.buffer);
  const zp = new Float64Array(kBlocks);
  for (let r = 0; r < n; r++) {
    if (src.dtype === 'float32') row.set(src.data.subarray(r * k, r * k + k));
    else if (src.dtype === 'bfloat16') widenBf16(src.data, r * k, k, rowBits);
    else row.set(f16ToF32(src.data.subarray(r * k, r * k + k))); // rare: a row's allocation is fine
    const blk = r * kBlocks;
    if (symmetric) scaleSymmetric(row, kBlocks, blockSize, bits, scales, blk, zp);
    else scaleAsymmetric(row, kBlocks, blockSize, bits, scales, blk, zp);
    if (bits === 4) codes4(row, kBlocks, blockSize, scales, blk, zp, packed, blk * blobSize);
    else codes8(row, kBlocks, blockSize, scales, blk, zp, packed, blk * blobSize);
    if (zeroPoints !== undefined) {
      const z = r * zpRow;
      if (bits === 8) for (let b = 0; b < kBlocks; b++) zeroPoints[z + b] = zp[b]!;
      else for (let b = 0; b < kBlocks; b++) zeroPoints[z + (b >> 1)]! |= zp[b]! << ((b & 1) * 4);
    }
  }
  return { packed, scales, zeroPoints };
}

function widenBf16(src: Uint16Array, from: number, k: number, out: Uint32Array): void {
  for (let i = 0; i < k; i++) out[i] = src[from + i]! << 16;
}

/** Per block: the range [min(0, lo), max(0, hi)] over 2^bits - 1 codes; NaN weights are in neither bound. */
function scaleAsymmetric(
  row: Float32Array,
  kBlocks: number,
  blockSize: number,
  bits: number,
  scales: Float32Array,
  blk: number,
  zp: Float64Array,
): void {
  const qmax = (1 << bits) - 1;
  for (let b = 0; b < kBlocks; b++) {
    let lo = 0;
    let hi = 0;
    const end = (b + 1) * blockSize;
    for (let i = b * blockSize; i < end; i++) {
      const v = row[i]!;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    const scale = Math.fround((hi - lo) / qmax);
    scales[blk + b] = scale;
    zp[b] = scale === 0 ? 0 : Math.min(qmax, Math.max(0, Math.round(-lo / scale)));
  }
}

/** Per block: the largest-magnitude value (the first of equal ones) maps to code 0. */
function scaleSymmetric(
  row: Float32Array,
  kBlocks: number,
  blockSize: number,
  bits: number,
  scales: Float32Array,
  blk: number,
  zp: Float64Array,
): void {
  const mid = 1 << (bits - 1);
  for (let b = 0; b < kBlocks; b++) {
    let amax = 0;
    let vmax = 0;
    const end = (b + 1) * blockSize;
    for (let i = b * blockSize; i < end; i++) {
      const v = row[i]!;
      const a = Math.abs(v);
      if (a > amax) {
        amax = a;
        vmax = v;
      }
    }
    scales[blk + b] = Math.fround(-vmax / mid);
    zp[b] = mid;
  }
}

/**
 * Math.round without its data-dependent branch (V8 rounds up, then steps back when that went past x + 0.5: a
 * coin flip on weights, measured ~4x the cost of the whole code loop otherwise). floor(x + 0.5) equals it for
 * every x except 0.5 - 2^-54, where x + 0.5 rounds to 1; past 2^52 both clamp to the same code. Ties go up, NaN
 * stays NaN, as Math.round.
 */
export function roundHalfUp(x: number): number {
  return x === 0.49999999999999994 ? 0 : Math.floor(x + 0.5);
}

/** 4-bit codes, two per byte, low nibble first: round(w / scale) + zp, clamped to [0, 15]. */
function codes4(
  row: Float32Array,
  kBlocks: number,
  blockSize: number,
  scales: Float32Array,
  blk: number,
  zp: Float64Array,
  packed: Uint8Array,
  out: number,
): void {
  const half = blockSize >> 1;
  for (let b = 0; b < kBlocks; b++) {
    const scale = scales[blk + b]!;
    const inv = scale === 0 ? 0 : 1 / scale;
    const z = zp[b]!;
    const i0 = b * blockSize;
    const o0 = out + b * half;
    for (let j = 0; j < half; j++) {
      let lo = roundHalfUp(row[i0 + 2 * j]! * inv) + z;
      lo = lo < 0 ? 0 : lo > 15 ? 15 : lo;
      let hi = roundHalfUp(row[i0 + 2 * j + 1]! * inv) + z;
      hi = hi < 0 ? 0 : hi > 15 ? 15 : hi;
      packed[o0 + j] = lo | (hi << 4);
    }
  }
}

/** 8-bit codes: round(w / scale) + zp, clamped to [0, 255] with compares (a NaN one stored as 0). */
function codes8(
  row: Float32Array,
  kBlocks: number,
  blockSize: number,
  scales: Float32Array,
  blk: number,
  zp: Float64Array,
  packed: Uint8Array,
  out: number,
): void {
  for (let b = 0; b < kBlocks; b++) {
    const scale = scales[blk + b]!;
    const inv = scale === 0 ? 0 : 1 / scale;
    const z = zp[b]!;
    const i0 = b * blockSize;
    const o0 = out + i0;
    for (let i = 0; i < blockSize; i++) {
      const q = roundHalfUp(row[i0 + i]! * inv) + z;
      packed[o0 + i] = q < 0 ? 0 : q > 255 ? 255 : q | 0;
    }
  }
}
