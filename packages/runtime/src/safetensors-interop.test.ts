import type { Tensor } from '@vlmkit/safetensors';
import { describe, expect, it } from 'vitest';
import { fromSafetensors, toSafetensors } from './safetensors-interop.js';

describe('fromSafetensors / toSafetensors', () => {
  it('maps BF16 to float32, converted exactly', () => {
    // 1, -0.5, 3.140625 (0x4049), +inf, the smallest bf16 subnormal (2^-133)
    const t = fromSafetensors({ dtype: 'BF16', shape: [5], data: Uint16Array.from([0x3f80, 0xbf00, 0x4049, 0x7f80, 0x0001]) });
    expect(t.dtype).toBe('float32');
    expect(t.dims).toEqual([5]);
    expect(Array.from(t.data as Float32Array)).toEqual([1, -0.5, 3.140625, Infinity, 2 ** -133]);
  });

  it('keeps every other dtype one to one, sharing the data', () => {
    const cases: [Tensor, string][] = [
      [{ dtype: 'F32', shape: [2], data: Float32Array.from([1, 2]) }, 'float32'],
      [{ dtype: 'F16', shape: [1], data: Uint16Array.from([0x3c00]) }, 'float16'],
      [{ dtype: 'F64', shape: [1], data: Float64Array.from([1]) }, 'float64'],
      [{ dtype: 'I64', shape: [1], data: BigInt64Array.from([5n]) }, 'int64'],
      [{ dtype: 'I32', shape: [1], data: Int32Array.from([5]) }, 'int32'],
      [{ dtype: 'I16', shape: [1], data: Int16Array.from([5]) }, 'int16'],
      [{ dtype: 'I8', shape: [1], data: Int8Array.from([5]) }, 'int8'],
      [{ dtype: 'U8', shape: [1], data: Uint8Array.from([5]) }, 'uint8'],
      [{ dtype: 'BOOL', shape: [2], data: Uint8Array.from([1, 0]) }, 'bool'],
    ];
    for (const [st, dtype] of cases) {
      const h = fromSafetensors(st);
      expect(h.dtype).toBe(dtype);
      expect(h.data).toBe(st.data);
      expect(toSafetensors(h)).toEqual(st);
    }
  });

  it('refuses data of the wrong array type', () => {
    expect(() => fromSafetensors({ dtype: 'F32', shape: [1], data: Uint16Array.from([1]) })).toThrow(/needs a Float32Array/);
    expect(() => fromSafetensors({ dtype: 'BF16', shape: [1], data: Float32Array.from([1]) })).toThrow(/Uint16Array bits/);
  });
});
