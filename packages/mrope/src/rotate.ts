import { MropeError } from './errors.js';

/**
 * How a rotary table rotates a head vector of size 2 * half.
 * - 'interleaved' (GPT-J; ERNIE text): pairs (x[2i], x[2i+1]) rotate by angle i.
 * - 'halves' (neox; Qwen text, all vision towers): pairs (x[i], x[i + half]).
 */
export type RotaryStyle = 'interleaved' | 'halves';

/** Where the sequence axis sits in a 4D activation: [B, S, H, hd] or [B, H, S, hd]. */
export type HeadLayout = 'BSHD' | 'BHSD';

export interface RotaryTable {
  cos: Float32Array;
  sin: Float32Array;
  /** [B or 1, S, half]; batch 1 broadcasts. */
  shape: readonly [number, number, number];
}

/**
 * Reference rotation in plain TypeScript (float32 result), for tests and for
 * callers without ORT. x is row-major [B, S, H, hd] or [B, H, S, hd].
 * Per pair: (a, b) -> (a cos - b sin, b cos + a sin), as HF's
 * `q * cos + rotate_half(q) * sin` with its own rotate_half.
 */
export function applyRotaryReference(
  x: Float32Array,
  xShape: readonly [number, number, number, number],
  table: RotaryTable,
  style: RotaryStyle,
  layout: HeadLayout = 'BSHD',
): Float32Array {
  const [B, d1, d2, hd] = xShape;
  const [S, H] = layout === 'BSHD' ? [d1, d2] : [d2, d1];
  const [tb, ts, half] = table.shape;
  if (hd !== 2 * half || ts !== S || (tb !== 1 && tb !== B) || x.length !== B * d1 * d2 * hd) {
    throw new MropeError(
      'SHAPE_MISMATCH',
      `rotary: x [${xShape.join(', ')}] (${layout}) does not fit a table [${table.shape.join(', ')}].`,
    );
  }
  const out = new Float32Array(x.length);
  for (let b = 0; b < B; b++) {
    for (let s = 0; s < S; s++) {
      const t = ((tb === 1 ? 0 : b) * S + s) * half;
      for (let h = 0; h < H; h++) {
        const o = (layout === 'BSHD' ? (b * S + s) * H + h : (b * H + h) * S + s) * hd;
        for (let i = 0; i < half; i++) {
          const [ia, ib] = style === 'interleaved' ? [o + 2 * i, o + 2 * i + 1] : [o + i, o + i + half];
          const a = x[ia]!;
          const v = x[ib]!;
          const c = table.cos[t + i]!;
          const sn = table.sin[t + i]!;
          out[ia] = a * c - v * sn;
          out[ib] = v * c + a * sn;
        }
      }
    }
  }
  return out;
}
