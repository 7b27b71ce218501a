import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SafetensorsError } from './errors.js';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16, toFloat32 } from './index.js';

const all16 = Uint16Array.from({ length: 65536 }, (_, i) => i);
const isNaN16 = (h: number) => (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
const isNaNBf16 = (h: number) => (h & 0x7f80) === 0x7f80 && (h & 0x7f) !== 0;
const bitsOf = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);
const f32 = (...v: number[]) => new Float32Array(v);
const u32 = (...v: number[]) => new Float32Array(new Uint32Array(v).buffer);

/** IEEE half value from its fields, computed in float64 independently of half.ts. */
function halfValue(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0x1f) return m === 0 ? s * Infinity : NaN;
  return e === 0 ? s * m * 2 ** -24 : s * (1 + m / 1024) * 2 ** (e - 15);
}

describe('f16 <-> f32', () => {
  it('converts all 65536 f16 bit patterns exactly (signed zero, subnormals, inf, NaN)', () => {
    const out = f16ToF32(all16);
    const bad: number[] = [];
    for (let h = 0; h < 65536; h++) {
      const want = halfValue(h);
      if (Number.isNaN(want) ? !Number.isNaN(out[h]) : !Object.is(out[h], want)) bad.push(h);
    }
    expect(bad).toEqual([]);
  });

  it('round-trips every non-NaN f16 through f32 bit-exactly, and keeps NaN a NaN', () => {
    const back = f32ToF16(f16ToF32(all16));
    const bad: number[] = [];
    for (let h = 0; h < 65536; h++) if (isNaN16(h) ? !isNaN16(back[h]!) : back[h] !== h) bad.push(h);
    expect(bad).toEqual([]);
  });

  it('rounds every exact midpoint between neighbouring f16 values to the even one', () => {
    // Midpoints of adjacent f16 values are exact in f32, so ties are tested exhaustively.
    // Just above / below the midpoint round away from the tie.
    const bad: number[] = [];
    for (let h = 0; h < 0x7bff; h++) {
      const mid = (halfValue(h) + halfValue(h + 1)) / 2;
      const even = h % 2 === 0 ? h : h + 1;
      const got = f32ToF16(f32(mid, -mid, mid * (1 + 2 ** -20), mid * (1 - 2 ** -20)));
      if (got.join() !== [even, even | 0x8000, h + 1, h].join()) bad.push(h);
    }
    expect(bad).toEqual([]);
  });

  it('handles the edges: max, overflow to inf, smallest subnormal, underflow, inf, NaN', () => {
    const cases: Array<[number, number]> = [
      [65504, 0x7bff], // max f16
      [65519.996, 0x7bff], // below the overflow midpoint
      [65520, 0x7c00], // the midpoint 65504..65536 ties to even = inf
      [1e6, 0x7c00],
      [-1e6, 0xfc00],
      [Infinity, 0x7c00],
      [-Infinity, 0xfc00],
      [2 ** -24, 0x0001], // smallest subnormal
      [2 ** -25, 0x0000], // tie between 0 and 2^-24 goes to 0 (even)
      [2 ** -25 * 1.0001, 0x0001],
      [3 * 2 ** -25, 0x0002], // tie between 1 and 2 subnormal units goes to 2
      [2 ** -14, 0x0400], // smallest normal
      [2 ** -14 - 2 ** -25, 0x0400], // rounds up out of the subnormals into the normals
      [1e-10, 0x0000],
      [-0, 0x8000],
      [1, 0x3c00],
      [1 + 2 ** -11, 0x3c00], // tie to even
      [1 + 3 * 2 ** -11, 0x3c02],
    ];
    const got = f32ToF16(f32(...cases.map(([v]) => v)));
    cases.forEach(([v, want], i) => {
      expect(got[i], `${v}`).toBe(want);
    });
    const nan = f32ToF16(u32(0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa12345));
    expect([...nan]).toEqual([0x7e00, 0xfe00, 0x7e00, 0x7f09]); // torch 2.13 gives these bits too
  });

  it('round-trips random f32 values within half an f16 ulp', () => {
    let seed = 42;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const x = Float32Array.from({ length: 10000 }, () => (rand() - 0.5) * 2 ** Math.floor(rand() * 30 - 14));
    const back = f16ToF32(f32ToF16(x));
    for (let i = 0; i < x.length; i++) {
      const ulp = Math.abs(x[i]!) < 2 ** -14 ? 2 ** -24 : 2 ** (Math.floor(Math.log2(Math.abs(x[i]!))) - 10);
      expect(Math.abs(back[i]! - x[i]!)).toBeLessThanOrEqual(ulp / 2);
    }
  });
});

describe('bf16 <-> f32', () => {
  it('converts every bf16 bit pattern to the f32 with the same top 16 bits', () => {
    const out = bitsOf(bf16ToF32(all16));
    expect([...out].every((b, h) => b === h * 65536)).toBe(true);
  });

  it('round-trips every non-NaN bf16 exactly, and keeps NaN a NaN', () => {
    const back = f32ToBf16(bf16ToF32(all16));
    const bad: number[] = [];
    for (let h = 0; h < 65536; h++) if (isNaNBf16(h) ? !isNaNBf16(back[h]!) : back[h] !== h) bad.push(h);
    expect(bad).toEqual([]);
  });

  it('rounds every midpoint to even and everything else to nearest', () => {
    const bad: number[] = [];
    for (let h = 0; h < 0x7f80; h++) {
      const mid = h * 65536 + 0x8000;
      const even = h % 2 === 0 ? h : h + 1;
      const got = f32ToBf16(u32(mid, mid - 1, mid + 1, (mid | 0x80000000) >>> 0));
      if (got.join() !== [even, h, h + 1, even | 0x8000].join()) bad.push(h);
    }
    expect(bad).toEqual([]);
  });

  it('handles the edges: max finite, overflow to inf, inf, subnormals, NaN', () => {
    const got = f32ToBf16(u32(0x7f7fffff, 0x7f7f7fff, 0xff7fffff, 0x7f800000, 0x00000001, 0x00008000, 0x00018000, 0x80000000));
    expect([...got]).toEqual([0x7f80, 0x7f7f, 0xff80, 0x7f80, 0x0000, 0x0000, 0x0002, 0x8000]);
    const nan = f32ToBf16(u32(0x7fc00000, 0xffc00001, 0x7f800001));
    for (const h of nan) expect(isNaNBf16(h)).toBe(true);
    expect(nan[1]! & 0x8000).toBe(0x8000);
  });
});

describe('torch reference conversions (sidecar of tools/make-fixture.py)', () => {
  const sidecar = JSON.parse(readFileSync(new URL('./__fixtures__/python-written.json', import.meta.url), 'utf8')) as {
    conversions: { f32: number[]; bf16: number[]; f16: number[] };
  };
  const x = u32(...sidecar.conversions.f32);

  it(`matches torch's f32 -> bf16 rounding on ${x.length} edge and random values`, () => {
    expect([...f32ToBf16(x)]).toEqual(sidecar.conversions.bf16);
  });

  it(`matches torch's f32 -> f16 rounding on ${x.length} edge and random values`, () => {
    expect([...f32ToF16(x)]).toEqual(sidecar.conversions.f16);
  });
});

describe('toFloat32', () => {
  it('converts each float dtype and returns F32 data as is', () => {
    const data = f32(1.5, -2);
    expect(toFloat32({ dtype: 'F32', shape: [2], data })).toBe(data);
    expect([...toFloat32({ dtype: 'F16', shape: [2], data: new Uint16Array([0x3e00, 0xc000]) })]).toEqual([1.5, -2]);
    expect([...toFloat32({ dtype: 'BF16', shape: [2], data: new Uint16Array([0x3fc0, 0xc000]) })]).toEqual([1.5, -2]);
    expect([...toFloat32({ dtype: 'F64', shape: [2], data: new Float64Array([0.1, -2]) })]).toEqual([Math.fround(0.1), -2]);
  });

  it('refuses integer tensors with UNSUPPORTED_CONVERSION', () => {
    const err = (() => {
      try {
        toFloat32({ dtype: 'I32', shape: [1], data: new Int32Array(1) });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(SafetensorsError);
    expect((err as SafetensorsError).code).toBe('UNSUPPORTED_CONVERSION');
  });
});
