import { describe, expect, it } from 'vitest';
import { GraphError } from './errors.js';
import { Graph } from './graph.js';
import { runGraph } from './test-utils/ort.js';

describe('splitDynamic', () => {
  it('cuts rows by sizes given at run time, empty pieces included', async () => {
    const g = new Graph();
    const x = g.input('x', 'float32', ['n', 3]);
    const sizes = g.input('sizes', 'int64', [4]);
    const parts = g.splitDynamic(x, sizes, 4, 0);
    parts.forEach((p, i) => {
      g.output(p, `part${i}`);
    });
    const data = Array.from({ length: 18 }, (_, i) => i);
    const split = [2, 0, 3, 1];
    const out = await runGraph(g, { x: { dtype: 'float32', dims: [6, 3], data }, sizes: { dtype: 'int64', dims: [4], data: split } });
    let row = 0;
    split.forEach((n, i) => {
      expect(out[`part${i}`]!.dims).toEqual([n, 3]);
      expect(Array.from(out[`part${i}`]!.data as Float32Array)).toEqual(data.slice(row * 3, (row + n) * 3));
      row += n;
    });
  });

  it('refuses sizes that are not int64 [count]', () => {
    const g = new Graph();
    const x = g.input('x', 'float32', ['n', 3]);
    expect(() => g.splitDynamic(x, g.input('s', 'int64', [3]), 4, 0)).toThrow(GraphError);
    expect(() => g.splitDynamic(x, g.input('f', 'float32', [4]), 4, 0)).toThrow(GraphError);
  });
});
