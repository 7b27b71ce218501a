import { Graph } from '@vlmkit/onnx-graph';
import { describe, expect, it } from 'vitest';
import { areaPoolMatrix, interpolateDownsample, spatialOffsetDownsample } from './downsample.js';
import { unwindowedRaster, windowedRaster } from './raster.js';
import { f32, runGraph } from './test-utils/run.js';

/** Runs one helper on x = [1, side*side, 1] holding 0..side*side-1 (each value = its raster index). */
async function onIndices(
  side: number,
  build: (g: Graph, x: ReturnType<Graph['input']>) => ReturnType<Graph['input']>,
): Promise<{ data: number[]; dims: readonly number[] }> {
  const g = new Graph();
  const x = g.input('x', 'float32', ['b', side * side, 1]);
  g.output(build(g, x), 'y');
  const data = Float32Array.from({ length: side * side }, (_, i) => i);
  const out = (await runGraph(g, { x: f32(data, [1, side * side, 1]) }))['y']!;
  return { data: Array.from(out.data as Float32Array), dims: out.dims };
}

describe('raster helpers on a 4x4 grid of raster indices (hand derivations)', () => {
  // 0  1  2  3
  // 4  5  6  7
  // 8  9 10 11
  // 12 13 14 15
  it('windowedRaster(side 4, win 2): windows TL, TR, BL, BR, each in raster order', async () => {
    const y = await onIndices(4, (g, x) => windowedRaster(g, x, { side: 4, win: 2, channels: 1 }));
    expect(y.dims).toEqual([4, 4, 1]);
    expect(y.data).toEqual([0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15]);
  });

  it('unwindowedRaster inverts it', async () => {
    const y = await onIndices(4, (g, x) =>
      unwindowedRaster(g, windowedRaster(g, x, { side: 4, win: 2, channels: 1 }), { windowsPerSide: 2, win: 2, channels: 1, batch: 'b' }),
    );
    expect(y.dims).toEqual([1, 16, 1]);
    expect(y.data).toEqual(Array.from({ length: 16 }, (_, i) => i));
  });

  it('spatialOffsetDownsample: TL 0 2 8 10, TR 1 3 9 11, BL 4 6 12 14, BR 5 7 13 15', async () => {
    const corners = [];
    for (const k of [0, 1, 2, 3] as const)
      corners.push((await onIndices(4, (g, x) => spatialOffsetDownsample(g, x, { side: 4, offset: k, channels: 1 }))).data);
    expect(corners).toEqual([
      [0, 2, 8, 10],
      [1, 3, 9, 11],
      [4, 6, 12, 14],
      [5, 7, 13, 15],
    ]);
  });

  it('interpolateDownsample 4 -> 2 is the 2x2 mean: (0+1+4+5)/4 = 2.5, then 4.5, 10.5, 12.5', async () => {
    expect((await onIndices(4, (g, x) => interpolateDownsample(g, x, { side: 4, newSide: 2, channels: 1 }))).data).toEqual([
      2.5, 4.5, 10.5, 12.5,
    ]);
  });

  it('interpolateDownsample 6 -> 4 (torch area = adaptive pool): rows/cols [0,2) [1,3) [3,5) [4,6)', async () => {
    // Cell (0,0) averages indices {0,1,6,7} = 3.5; cell (1,2) rows [1,3) x cols [3,5): {9,10,15,16} = 12.5.
    const y = await onIndices(6, (g, x) => interpolateDownsample(g, x, { side: 6, newSide: 4, channels: 1 }));
    expect(y.dims).toEqual([1, 16, 1]);
    expect(y.data[0]).toBeCloseTo(3.5, 5);
    expect(y.data[1 * 4 + 2]).toBeCloseTo(12.5, 5);
    expect(y.data[15]).toBeCloseTo((28 + 29 + 34 + 35) / 4, 5);
    // Every row of the pooling matrix sums to 1.
    const m = areaPoolMatrix(6, 4);
    for (let r = 0; r < 16; r++) expect(m.subarray(r * 36, (r + 1) * 36).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
  });
});
