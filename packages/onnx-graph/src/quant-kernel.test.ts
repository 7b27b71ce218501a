import { f32ToBf16, f32ToF16 } from '@vlmkit/safetensors';
import { describe, expect, it } from 'vitest';
import type { QuantizedBlocks, QuantizeOptions } from './quant.js';
import { quantizeBlockwise } from './quant.js';
import { quantizeRows, roundHalfUp } from './quant-kernel.js';
import { floatValues } from './quant-ref.js';
import { tensorFromArray } from './tensor-ref.js';
import { randn } from './test-utils/ort.js';

/**
 * The quantizer as first written (one block at a time, codes through a Uint8Array, Math.min/max clamps): the
 * reference the tuned kernel must equal byte for byte, so that graph caches and measured accuracy stay valid.
 */
function reference(w: Float32Array, n: number, k: number, o: Pick<QuantizeOptions, 'bits' | 'blockSize' | 'symmetric'>): QuantizedBlocks {
  const { bits, blockSize, symmetric } = o;
  const kBlocks = Math.ceil(k / blockSize);
  const blobSize = (blockSize * bits) / 8;
  const zpRow = Math.ceil((kBlocks * bits) / 8);
  const qmax = (1 << bits) - 1;
  const mid = 1 << (bits - 1);
  const packed = new Uint8Array(n * kBlocks * blobSize);
  const scales = new Float32Array(n * kBlocks);
  const zeroPoints = symmetric ? undefined : new Uint8Array(n * zpRow);
  const codes = new Uint8Array(blockSize);
  for (let r = 0; r < n; r++) {
    for (let b = 0; b < kBlocks; b++) {
      const start = b * blockSize;
      const end = Math.min(start + blockSize, k);
      let [lo, hi, amax, vmax] = [0, 0, 0, 0];
      for (let i = start; i < end; i++) {
        const v = w[r * k + i]!;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        if (Math.abs(v) > amax) [amax, vmax] = [Math.abs(v), v];
      }
      const scale = symmetric ? Math.fround(-vmax / mid) : Math.fround((hi - lo) / qmax);
      const zp = symmetric ? mid : scale === 0 ? 0 : Math.min(qmax, Math.max(0, Math.round(-lo / scale)));
      const inv = scale === 0 ? 0 : 1 / scale;
      codes.fill(zp);
      for (let i = start; i < end; i++) codes[i - start] = Math.min(qmax, Math.max(0, Math.round(w[r * k + i]! * inv) + zp));
      const blk = r * kBlocks + b;
      scales[blk] = scale;
      if (bits === 8) packed.set(codes, blk * blobSize);
      else for (let j = 0; j < blobSize; j++) packed[blk * blobSize + j] = codes[2 * j]! | (codes[2 * j + 1]! << 4);
      if (zeroPoints !== undefined) {
        if (bits === 8) zeroPoints[r * zpRow + b] = zp;
        else zeroPoints[r * zpRow + (b >> 1)]! |= zp << ((b & 1) * 4);
      }
    }
  }
  return { packed, scales, zeroPoints };
}

/** Bytes of a quantization, for an exact comparison (scales as their bits: -0 and NaN included). */
function bytesOf(q: QuantizedBlocks): { packed: number[]; scales: number[]; zeroPoints: number[] | undefined } {
  return {
    packed: Array.from(q.packed),
    scales: Array.from(new Uint32Array(q.scales.buffer, q.scales.byteOffset, q.scales.length)),
    zeroPoints: q.zeroPoints && Array.from(q.zeroPoints),
  };
}

/**
 * Rows of random weights at several magnitudes, and rows that hit each edge: all zero, constant (positive,
 * negative), one value, +-Inf, NaN, a lone NaN among zeros, huge and subnormal values, -0, and values whose
 * quotient by the scale is a rounding tie.
 */
function weights(n: number, k: number, seed: number): Float32Array {
  const w = randn(n * k, seed);
  // Each edge case as a function of the column i and the random weight x there.
  const rows: ((i: number, x: number) => number)[] = [
    () => 0,
    () => 0.75,
    () => -3,
    (i) => (i === 5 ? 2.5 : 0),
    (i, x) => (i % 7 === 0 ? Number.POSITIVE_INFINITY : x),
    (i) => (i % 9 === 0 ? Number.NEGATIVE_INFINITY : i % 11 === 0 ? Number.POSITIVE_INFINITY : 1),
    (i, x) => (i % 5 === 0 ? Number.NaN : x),
    (i) => (i === 3 ? Number.NaN : 0),
    () => Number.NaN,
    (_, x) => x * 3e38,
    (_, x) => x * 1e-40,
    (i) => (i % 2 === 0 ? -0 : 0),
    (i) => (i % 16) - 7.5, // range 15 over 15 codes: every value a tie at scale 1
    (_, x) => Math.round(x * 8) / 2, // half-steps: ties again
    (_, x) => x * 1e-3,
    (_, x) => Math.abs(x) * 100,
  ];
  // The first rows (as many as there are), the rest stay random.
  for (const [r, f] of rows.slice(0, n).entries()) for (let i = 0; i < k; i++) w[r * k + i] = f(i, w[r * k + i]!);
  return w;
}

const options: Pick<QuantizeOptions, 'bits' | 'blockSize' | 'symmetric'>[] = [];
for (const bits of [4, 8] as const)
  for (const symmetric of [false, true]) for (const blockSize of [16, 32, 64]) options.push({ bits, blockSize, symmetric });

describe('roundHalfUp', () => {
  it('is Math.round as a code: ties, the one value where x + 0.5 rounds, signed zeros, huge values, Inf, NaN', () => {
    const xs = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.49999999999999994, 0.5000000000000001, 0, -0, 1e-300];
    xs.push(2 ** 52 - 0.5, 2 ** 52 + 1, -(2 ** 52) + 0.5, 2 ** 53 + 2, 1e300, -1e300, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY);
    const r = randn(20000, 13);
    for (let i = 0; i < r.length; i++) xs.push(r[i]! * 20, Math.round(r[i]! * 40) / 2, (Math.round(r[i]! * 40) + 1) / 2 - 2 ** -40);
    // Past 2^52 the two may differ by one, both far past any code: compared clamped, as the kernel uses them.
    const code = (v: number) => Math.min(256, Math.max(-256, v)) + 0; // + 0: a -0 is the same code
    const wrong = xs.filter((x) => code(roundHalfUp(x)) !== code(Math.round(x)));
    expect(wrong).toEqual([]);
    expect(roundHalfUp(0.49999999999999994)).toBe(0);
    expect(roundHalfUp(Number.NaN)).toBeNaN();
  });
});

describe('quantizeRows', () => {
  // K: whole blocks, a partial last block of odd length (int4 pads a nibble), fewer weights than a block, one weight.
  for (const [n, k] of [
    [24, 128],
    [33, 97],
    [20, 40],
    [3, 5],
    [2, 1],
  ] as const) {
    for (const o of options) {
      it(`equals the reference byte for byte: [${n}, ${k}] int${o.bits} block ${o.blockSize}${o.symmetric ? ' symmetric' : ''}`, () => {
        const w = weights(n, k, n * 1000 + k);
        const want = bytesOf(reference(w, n, k, o));
        expect(bytesOf(quantizeBlockwise(w, n, k, o))).toEqual(want);
        // From 16-bit bits (the first load's path): the reference on the same values widened whole.
        const bf = f32ToBf16(w);
        const viaBf16 = bytesOf(reference(new Float32Array(new Uint32Array(Array.from(bf, (h) => h << 16)).buffer), n, k, o));
        expect(bytesOf(quantizeRows({ dtype: 'bfloat16', data: bf }, n, k, o))).toEqual(viaBf16);
      });
    }
  }

  it('float16 rows widen as floatValues does (subnormals, Inf, NaN)', async () => {
    const [n, k] = [20, 72];
    const h = f32ToF16(weights(n, k, 5));
    const widened = await floatValues(tensorFromArray('float16', [n, k], h));
    for (const o of options) {
      expect(bytesOf(quantizeRows({ dtype: 'float16', data: h }, n, k, o))).toEqual(bytesOf(reference(widened, n, k, o)));
    }
  });

  it('random weights of the published widths (K 2560, many blocks per row)', () => {
    const [n, k] = [24, 2560];
    const w = randn(n * k, 99);
    for (const o of options) expect(bytesOf(quantizeBlockwise(w, n, k, o))).toEqual(bytesOf(reference(w, n, k, o)));
  });
});
