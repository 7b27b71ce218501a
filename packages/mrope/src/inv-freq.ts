import { MropeError } from './errors.js';

/**
 * Rotary inverse frequencies 1 / theta^(2i / dim), i < dim / 2, as float32: the float32 nearest to
 * each float32 step of HF's and vLLM's
 * `1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))`. torch's float32 pow is only
 * faithfully rounded, so an entry may differ from torch's by 1 ulp (cases in docs/design-notes.md);
 * pass the reference's own table as `invFreq` to the cos/sin functions where bit-equality matters.
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
