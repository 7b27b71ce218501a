import type { Graph, Value } from '@vlmkit/onnx-graph';

/**
 * Adds one deepstack level's image features to the hidden state at the image
 * positions: h[b, s] += features[n] where `positions[n]` = b * S + s
 * (ScatterND with reduction 'add' on the flattened [B*S, D] view). HF:
 * `hidden_states.masked_scatter(mask, hidden_states[mask] + features)` before
 * the target layer; vLLM adds a buffer that is zero off the image rows. With
 * N = 0 (decode steps) it is the identity. `level.positions` [N] int64,
 * `level.features` [N, D]. In a 16-bit graph (`floatConvertPass`) the sum is
 * taken in float32 and rounded once (HF adds in the compute dtype: one
 * rounding too; ORT's CPU EP has no 16-bit ScatterND 'add').
 */
export function addDeepstackFeatures(g: Graph, h: Value, level: { positions: Value; features: Value }, hiddenSize: number): Value {
  const flat = g.reshape(h, [-1, hiddenSize]);
  const summed = g.scatterND(flat, g.unsqueeze(level.positions, [1]), level.features, 'add');
  return g.reshape(summed, g.shapeOf(h), h.shape);
}

/** [N, D] float32 zeros, N = the number of `positions`: the rows that clear the image placeholders' embeddings. */
export function zeroRows(g: Graph, positions: Value, hiddenSize: number): Value {
  const shape = g.concat([g.shapeOf(positions), g.ints([hiddenSize])], 0);
  return g.constantOfShape(shape, 0, 'float32', [positions.dim(0), hiddenSize]);
}
