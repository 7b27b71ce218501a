import { describe, expect, it } from 'vitest';
import { allocateAs, DTYPE_OF, DTYPE_SIZE, DTYPES, ELEMENT_TYPE, viewAs } from './dtype.js';

// The one table of element types that onnx-graph, runtime and weight-mapper read instead of their own copies.
describe('element types', () => {
  it('name every dtype once, both ways, with its typed array', () => {
    expect(new Set(Object.values(ELEMENT_TYPE)).size).toBe(DTYPES.length);
    for (const d of DTYPES) {
      expect(DTYPE_OF[ELEMENT_TYPE[d]]).toBe(d);
      expect(allocateAs(d, 3).length).toBe(3);
      expect(allocateAs(d, 3).BYTES_PER_ELEMENT).toBe(DTYPE_SIZE[d]);
    }
    expect(ELEMENT_TYPE.BF16).toBe('bfloat16');
    expect(allocateAs('BF16', 1)).toBeInstanceOf(Uint16Array);
  });

  it('viewAs views a Uint8Array window in place, not from the start of its buffer', () => {
    const f = new Float32Array([1, 2, 3, 4]);
    const bytes = new Uint8Array(f.buffer).subarray(8);
    const v = viewAs('F32', bytes);
    expect([...v]).toEqual([3, 4]);
    f[3] = 9;
    expect(v[1]).toBe(9);
    expect([...viewAs('F32', f.buffer)]).toEqual([1, 2, 3, 9]);
  });
});
