import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { RuntimeError } from './errors.js';
import { bool, float32, fromOrt, hostTensor, int64, isHostTensor, isOrtTensor, numel, toOrt, zeros } from './tensor.js';

describe('host tensor constructors', () => {
  it('float32 copies numbers and keeps a Float32Array', () => {
    const t = float32([1, 2, 3, 4, 5, 6], [2, 3]);
    expect(t).toEqual({ dtype: 'float32', dims: [2, 3], data: Float32Array.from([1, 2, 3, 4, 5, 6]) });
    const data = new Float32Array(4);
    expect(float32(data, [4]).data).toBe(data);
  });

  it('int64 takes numbers or bigints and refuses unsafe integers', () => {
    expect(int64([1, -2, 3], [3]).data).toEqual(BigInt64Array.from([1n, -2n, 3n]));
    expect(int64([2n ** 62n], [1]).data[0]).toBe(2n ** 62n);
    expect(() => int64([2 ** 60], [1])).toThrow(/not a safe integer/);
  });

  it('bool stores one byte per element', () => {
    expect(bool([true, false, true], [3]).data).toEqual(Uint8Array.from([1, 0, 1]));
  });

  it('zeros and numel', () => {
    expect(zeros('int32', [2, 0, 3]).data).toEqual(new Int32Array(0));
    expect(numel([2, 3, 4])).toBe(24);
    expect(numel([])).toBe(1);
  });

  it('refuses a length that does not match the dims, and the wrong array type', () => {
    expect(() => float32([1, 2, 3], [2, 2])).toThrow(RuntimeError);
    expect(() => float32([1, 2, 3], [2, 2])).toThrow(/dims \[2, 2\] hold 4 elements but data has 3/);
    expect(() => hostTensor('float16', new Float32Array(2) as unknown as Uint16Array, [2])).toThrow(
      /float16 tensor needs a Uint16Array for its data, got Float32Array/,
    );
    expect(() => float32([1], [-1])).toThrow(/non-negative integers/);
  });
});

describe('toOrt / fromOrt', () => {
  it('round-trips every dtype and shares the data', () => {
    const cases = [
      float32([1.5, -2], [1, 2]),
      int64([1, 2, 3], [3]),
      bool([true, false], [2]),
      hostTensor('float16', Uint16Array.from([0x3c00, 0xc000]), [2]),
      hostTensor('int32', Int32Array.from([7]), [1]),
      hostTensor('int8', Int8Array.from([-3]), [1]),
      hostTensor('uint8', Uint8Array.from([250]), [1]),
      hostTensor('int16', Int16Array.from([-300]), [1]),
      hostTensor('float64', Float64Array.from([Math.PI]), [1]),
    ];
    for (const t of cases) {
      const o = toOrt(t);
      expect(isOrtTensor(o)).toBe(true);
      expect(o.type).toBe(t.dtype);
      expect(o.dims).toEqual(t.dims);
      const back = fromOrt(o);
      expect(back).toEqual(t);
      expect(back.data).toBe(t.data);
    }
  });

  it('tells host from ORT tensors', () => {
    const h = float32([1], [1]);
    expect(isHostTensor(h)).toBe(true);
    expect(isOrtTensor(h)).toBe(false);
    expect(isHostTensor(toOrt(h))).toBe(false);
  });

  it('refuses ORT dtypes a HostTensor does not have', () => {
    const t = new ort.Tensor('uint16', Uint16Array.from([1]), [1]);
    expect(() => fromOrt(t)).toThrow(/'uint16' has no HostTensor form/);
  });
});
