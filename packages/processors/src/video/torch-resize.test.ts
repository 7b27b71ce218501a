import { describe, expect, it } from 'vitest';
import { readBytes, readJson } from '../test-utils/fixtures.js';
import { torchResizeBicubicUint8 } from './torch-resize.js';

interface Index {
  cases: { name: string; height: number; width: number; new_height: number; new_width: number }[];
}

describe('torchResizeBicubicUint8 vs torchvision (tools/processors/make_torch_resize_cases.py)', () => {
  const { cases } = readJson<Index>('torch-resize', 'index.json');

  it.each(cases)('$name: $height x $width -> $new_height x $new_width byte-identical', (c) => {
    const data = readBytes('torch-resize', `${c.name}.in.rgb`);
    const want = readBytes('torch-resize', `${c.name}.out.rgb`);
    const got = torchResizeBicubicUint8({ width: c.width, height: c.height, channels: 3, data }, c.new_width, c.new_height);
    expect([got.height, got.width]).toEqual([c.new_height, c.new_width]);
    let differ = 0;
    for (let i = 0; i < want.length; i++) if (got.data[i] !== want[i]) differ++;
    expect(differ).toBe(0);
  });

  it('returns the input when the size does not change, as torchvision', () => {
    const im = { width: 2, height: 1, channels: 3, data: new Uint8Array(6) };
    expect(torchResizeBicubicUint8(im, 2, 1)).toBe(im);
  });
});
