import { describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import { readBytes, readJson } from '../test-utils/fixtures.js';
import { type ResampleFilter, resize } from './resize.js';

interface ResizeIndex {
  sources: Record<string, { width: number; height: number; file: string }>;
  cases: { source: string; filter: ResampleFilter; width: number; height: number; file: string }[];
}

const index = readJson<ResizeIndex>('resize', 'index.json');

/** Count of differing bytes and the largest difference. */
function compare(a: Uint8Array, b: Uint8Array): { differing: number; maxDiff: number } {
  let differing = 0;
  let maxDiff = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    if (d > 0) differing++;
    maxDiff = Math.max(maxDiff, d);
  }
  return { differing, maxDiff };
}

describe('resize is byte-identical to Pillow 12 Image.resize', () => {
  it('has the generated cases', () => {
    expect(index.cases.length).toBeGreaterThanOrEqual(40);
  });
  it.each(index.cases.map((c) => [`${c.source} -> ${c.width}x${c.height} ${c.filter}`, c] as const))('%s', (_, c) => {
    const src = index.sources[c.source]!;
    const im = { width: src.width, height: src.height, channels: 3, data: readBytes('resize', src.file) };
    const out = resize(im, c.width, c.height, c.filter);
    const expected = readBytes('resize', c.file);
    expect([out.width, out.height, out.channels]).toEqual([c.width, c.height, 3]);
    expect(out.data.length).toBe(expected.length);
    expect(compare(out.data, expected)).toEqual({ differing: 0, maxDiff: 0 });
  });
});

describe('resize', () => {
  const im = { width: 2, height: 2, channels: 1, data: new Uint8Array([0, 255, 255, 0]) };
  it('copies on a same-size resize', () => {
    const out = resize(im, 2, 2);
    expect(out.data).toEqual(im.data);
    expect(out.data).not.toBe(im.data);
  });
  it('refuses empty sizes and short buffers with INVALID_SIZE', () => {
    expect(() => resize(im, 0, 3)).toThrow(ProcessorError);
    expect(() => resize({ ...im, data: new Uint8Array(3) }, 1, 1)).toThrow(/needs 4 bytes, got 3/);
  });
  it('refuses a huge target by name, not with a typed-array RangeError', () => {
    // A size.shortest_edge of 1e12 once reached here as "Invalid typed array length".
    expect(() => resize(im, 1_000_000, 1_000_000)).toThrow(/resize: a 1000000x1000000 target is 1000000000000 pixels, more than/);
  });
});
