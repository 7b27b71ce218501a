/**
 * Exact conversions between 16-bit floats (as raw bits) and f32.
 * f16/bf16 -> f32 is exact. f32 -> f16/bf16 rounds to nearest, ties to even,
 * overflows to +-inf, keeps subnormals, and keeps NaN a NaN (sign and top
 * payload bits kept, quiet bit set, as x86 F16C / ARM FCVT do; torch's f16
 * conversion gives the same bits).
 */
import type { Tensor } from './dtype.js';
import { fail } from './errors.js';

export function bf16ToF32(bits: Uint16Array): Float32Array {
  return widen(bits, 'bf16');
}

export function f32ToBf16(x: Float32Array): Uint16Array {
  return narrow(x, 'bf16');
}

export function f32BitsToBf16(u: number): number {
  if ((u & 0x7fffffff) > 0x7f800000) return (u >>> 16) | 0x0040; // NaN stays NaN
  // c10::BFloat16 round_to_nearest_even: add 0x7fff plus the lowest kept bit.
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

export function f16ToF32(bits: Uint16Array): Float32Array {
  return widen(bits, 'f16');
}

export function f16BitsToF32Bits(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >>> 10) & 0x1f;
  let mant = h & 0x3ff;
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant << 13)) >>> 0; // inf, NaN (payload kept)
  if (exp !== 0) return (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0; // 112 = 127 - 15
  if (mant === 0) return sign >>> 0; // +-0
  // Subnormal: value = mant * 2^-24. Normalize so the leading 1 becomes implicit.
  let e = 113; // biased f32 exponent of 2^-14
  while ((mant & 0x400) === 0) {
    mant <<= 1;
    e--;
  }
  return (sign | (e << 23) | ((mant & 0x3ff) << 13)) >>> 0;
}

export function f32ToF16(x: Float32Array): Uint16Array {
  return narrow(x, 'f16');
}

export function f32BitsToF16(u: number): number {
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return mant === 0 ? sign | 0x7c00 : sign | 0x7e00 | (mant >>> 13);
  const e = exp - 112; // f16 biased exponent
  if (e >= 0x1f) return sign | 0x7c00; // beyond the largest finite f16 even before rounding
  if (e <= 0) {
    // f16 subnormal (or zero): keep mant * 2^-24 units. Below 2^-25 everything rounds to 0.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e; // 14..24
    const half = 1 << (shift - 1);
    const rem = mant & ((1 << shift) - 1);
    let r = mant >>> shift;
    if (rem > half || (rem === half && (r & 1) === 1)) r++; // may carry into the smallest normal: same bits
    return sign | r;
  }
  let r = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (r & 1) === 1)) r++; // a carry may reach 0x7c00 = inf, as it should
  return sign | r;
}

/**
 * 16-bit patterns to f32. One loop per format rather than a conversion passed in: V8 does not inline a
 * function argument here, and these loops convert whole checkpoints.
 */
function widen(bits: Uint16Array, from: 'bf16' | 'f16'): Float32Array {
  const out = new Float32Array(bits.length);
  const u = new Uint32Array(out.buffer);
  if (from === 'bf16') for (let i = 0; i < bits.length; i++) u[i] = bits[i]! << 16;
  else for (let i = 0; i < bits.length; i++) u[i] = f16BitsToF32Bits(bits[i]!);
  return out;
}

/** f32 to 16-bit patterns, rounded to nearest even (one loop per format, as `widen`). */
function narrow(x: Float32Array, to: 'bf16' | 'f16'): Uint16Array {
  const u = new Uint32Array(x.buffer, x.byteOffset, x.length);
  const out = new Uint16Array(x.length);
  if (to === 'bf16') for (let i = 0; i < u.length; i++) out[i] = f32BitsToBf16(u[i]!);
  else for (let i = 0; i < u.length; i++) out[i] = f32BitsToF16(u[i]!);
  return out;
}

/**
 * Any float tensor as f32. F16 and BF16 are exact; F64 rounds to nearest (the
 * only lossy case, as torch's `.float()`); F32 data is returned as is, not copied.
 */
export function toFloat32(t: Tensor): Float32Array {
  switch (t.dtype) {
    case 'F32':
      return t.data as Float32Array;
    case 'F16':
      return f16ToF32(t.data as Uint16Array);
    case 'BF16':
      return bf16ToF32(t.data as Uint16Array);
    case 'F64':
      return Float32Array.from(t.data as Float64Array);
    default:
      return fail(
        'UNSUPPORTED_CONVERSION',
        `cannot convert a ${t.dtype} tensor to float32: expected one of F64, F32, F16, BF16, found ${t.dtype}. Read it with read() and convert the integers yourself.`,
      );
  }
}
