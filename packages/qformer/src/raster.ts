import type { Dim, Graph, Value } from '@vlmkit/onnx-graph';
import { dimProduct } from '@vlmkit/onnx-graph';

/**
 * HF/vLLM: _windowed_raster / _win. [B, side*side, C] in raster order ->
 * [B*n*n, win*win, C] with n = side/win: each win x win window becomes one
 * batch row (windows in raster order, tile-major), its cells in raster order.
 */
export function windowedRaster(g: Graph, x: Value, grid: { side: number; win: number; channels: number }): Value {
  const { side, win, channels: c } = grid;
  const n = side / win;
  return g.scope('windowed_raster', () => {
    const grid = g.reshape(x, [-1, n, win, n, win, c], [x.dim(0), n, win, n, win, c]);
    const windows = g.transpose(grid, [0, 1, 3, 2, 4, 5]); // [B, n, n, win, win, C]
    return g.reshape(windows, [-1, win * win, c], [dimProduct([x.dim(0), n * n]), win * win, c]);
  });
}

/**
 * HF/vLLM: _unwindowed_raster / _unwin, the inverse: [B*n*n, win*win, C] ->
 * [B, (n*win)^2, C] in raster order, n = `windowsPerSide`. `batch` is B, for
 * the output's shape.
 */
export function unwindowedRaster(g: Graph, xw: Value, grid: { windowsPerSide: number; win: number; channels: number; batch: Dim }): Value {
  const { windowsPerSide: n, win, channels: c, batch } = grid;
  const side = n * win;
  return g.scope('unwindowed_raster', () => {
    const windows = g.reshape(xw, [-1, n, n, win, win, c], [batch, n, n, win, win, c]);
    const grid = g.transpose(windows, [0, 1, 3, 2, 4, 5]); // [B, n, win, n, win, C]
    return g.reshape(grid, [-1, side * side, c], [batch, side * side, c]);
  });
}
