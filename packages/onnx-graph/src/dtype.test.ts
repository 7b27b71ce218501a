import { describe, expect, it } from 'vitest';
import { dtypeSize, normalizeDType, typedArrayFor } from './dtype.js';

// Graph dtypes are safetensors' element types: names, sizes and arrays come from @vlmkit/safetensors' table.
describe('graph dtypes', () => {
  it('accept graph and safetensors names and refuse anything else, inherited object keys included', () => {
    expect(normalizeDType('float32')).toBe('float32');
    expect(normalizeDType('BF16')).toBe('bfloat16');
    expect(() => normalizeDType('toString')).toThrow(TypeError);
    expect(() => normalizeDType('F8_E4M3')).toThrow(/unknown dtype 'F8_E4M3'/);
  });

  it('hold 16-bit floats as raw bits and bool as bytes', () => {
    expect(typedArrayFor('bfloat16', 2)).toBeInstanceOf(Uint16Array);
    expect(typedArrayFor('bool', 2)).toBeInstanceOf(Uint8Array);
    expect(typedArrayFor('int64', 2)).toBeInstanceOf(BigInt64Array);
    expect([dtypeSize('float64'), dtypeSize('float16'), dtypeSize('bool')]).toEqual([8, 2, 1]);
  });
});
