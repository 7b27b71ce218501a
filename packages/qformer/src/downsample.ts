import type { Graph, Value } from '@vlmkit/onnx-graph';

/**
 * HF: interpolate_downsample (vLLM: InterpolateDownsampler): [B, s*s, C] ->
 * [B, t*t, C] by torch's area interpolation, i.e. adaptive average pooling:
 * output cell i averages input rows floor(i*s/t) .. ceil((i+1)*s/t) - 1, per axis.
 * An integer ratio (Granite's 2x2 mean) is a reshape and a ReduceMean; any
 * other ratio multiplies by the constant [t*t, s*s] pooling matrix.
 */
export function interpolateDownsample(g: Graph, x: Value, grid: { side: number; newSide: number; channels: number }): Value {
  const { side, newSide, channels: c } = grid;
  const b = x.dim(0);
  return g.scope('interpolate_downsample', () => {
    if (side % newSide === 0) {
      const k = side / newSide;
      const blocks = g.reshape(x, [-1, newSide, k, newSide, k, c], [b, newSide, k, newSide, k, c]);
      const mean = g.reduceMean(blocks, [2, 4], false); // [B, t, t, C]
      return g.reshape(mean, [-1, newSide * newSide, c], [b, newSide * newSide, c]);
    }
    const pool = areaPoolMatrix(side, newSide);
    const m = g.constant('float32', [newSide * newSide, side * side], pool);
    return g.matmul(x.dtype === 'float32' ? m : g.cast(m, x.dtype), x); // [t*t, s*s] x [B, s*s, C]
  });
}

/** The 2-D adaptive-average-pool matrix [t*t, s*s] (row-major cells on both sides): torch's start/end indices per axis. */
export function areaPoolMatrix(side: number, newSide: number): Float32Array {
  const cells = Array.from({ length: newSide }, (_, i) => {
    const start = Math.floor((i * side) / newSide);
    const end = Math.floor(((i + 1) * side + newSide - 1) / newSide); // ceil((i+1)*s/t)
    return { start, end };
  });
  const m = new Float32Array(newSide * newSide * side * side);
  for (let i = 0; i < newSide; i++) {
    for (let j = 0; j < newSide; j++) {
      const [ri, cj] = [cells[i]!, cells[j]!];
      const weight = 1 / ((ri.end - ri.start) * (cj.end - cj.start));
      for (let r = ri.start; r < ri.end; r++) {
        for (let col = cj.start; col < cj.end; col++) m[(i * newSide + j) * side * side + r * side + col] = weight;
      }
    }
  }
  return m;
}

/** Corner (row, column) within each 2x2 block for spatial offsets 0..3: TL, TR, BL, BR. */
export const SPATIAL_OFFSETS: readonly (readonly [number, number])[] = [
  [0, 0],
  [0, 1],
  [1, 0],
  [1, 1],
];

/**
 * HF: spatial_offset_downsample (vLLM: SpatialOffsetDownsampler): [B, s*s, C]
 * -> [B, (s/2)^2, C], one corner of every 2x2 block (s even).
 */
export function spatialOffsetDownsample(g: Graph, x: Value, grid: { side: number; offset: 0 | 1 | 2 | 3; channels: number }): Value {
  const { side, offset, channels: c } = grid;
  const b = x.dim(0);
  const half = side / 2;
  const [oh, ow] = SPATIAL_OFFSETS[offset]!;
  return g.scope('spatial_offset_downsample', () => {
    const blocks = g.reshape(x, [-1, half, 2, half, 2, c], [b, half, 2, half, 2, c]);
    const corner = g.slice(blocks, [oh, ow], [oh + 1, ow + 1], [2, 4]); // [B, s/2, 1, s/2, 1, C]
    return g.reshape(corner, [-1, half * half, c], [b, half * half, c]);
  });
}
