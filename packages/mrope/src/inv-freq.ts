import { MropeError } from './errors.js';

/**
 * Rotary inverse frequencies 1 / theta^(2i / dim), i < dim / 2, as float32.
 *
 * HF and vLLM compute `1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))`
 * in float32. We return the float32 nearest to each float32 step of that
 * formula. torch's CPU float32 pow is only faithfully rounded (<= 1 ulp), so
 * for a few (dim, theta) pairs one entry differs by 1 ulp (e.g. dim 128,
 * theta 1e6, i = 37; theta 5e6, i = 19; none for dim 128 / theta 5e5 or
 * dim 40 / theta 1e4). The angle error that makes is |pos| * 1 ulp(inv_freq),
 * below 1e-6 for positions in the thousands. Pass the reference's own table
 * as `invFreq` to the cos/sin functions where bit-equality matters.
 */
export function ropeInverseFrequencies(dim: number, theta: number): Float32Array {
  if (!Number.isInteger(dim) || dim <= 0 || dim % 2 !== 0) {
    throw new MropeError('INVALID_ROTARY_CONFIG', `rotary dim must be a positive even integer, got ${dim}.`);
  }
  if (!(theta > 0)) throw new MropeError('INVALID_ROTARY_CONFIG', `rope theta must be positive, got ${theta}.`);
  const out = new Float32Array(dim / 2);
  for (let i = 0; i < dim / 2; i++) {
    const exponent = Math.fround((2 * i) / dim);
    out[i] = Math.fround(1 / Math.fround(theta ** exponent));
  }
  return out;
}

/** The float32 rotation angle torch computes: the product of two float32 values, rounded to float32. */
export function angle(pos: number, invFreq: number): number {
  return Math.fround(pos * invFreq);
}
