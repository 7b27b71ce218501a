import type { Graph, Value, Weights } from '@vlmkit/onnx-graph';

/**
 * embed_tokens, then the vision features scattered over their placeholder
 * rows: `visionPositions` [N] are flattened b * S + s indices, `visionEmbeds`
 * [N, D] their rows (HF: inputs_embeds.masked_scatter at image/video token
 * positions; N may be 0). The rows come out in the graph's compute dtype
 * whatever the table's dtype (a table already in it is read as stored), and
 * the vision rows are cast to it.
 */
export function embedTokens(
  g: Graph,
  w: Weights,
  inputIds: Value,
  dims: { vocabSize: number; hiddenSize: number },
  vision?: { embeds: Value; positions: Value },
): Value {
  const { vocabSize, hiddenSize } = dims;
  const table = g.param(w, 'embed_tokens.weight', [vocabSize, hiddenSize]);
  return g.scope('embed_tokens', () => {
    const rows = g.gather(table, inputIds, 0); // [B, S, D]
    const x = g.cast(rows, g.computeDtype);
    if (vision === undefined) return x;
    const flat = g.reshape(x, [-1, hiddenSize]);
    const merged = g.scatterND(flat, g.unsqueeze(vision.positions, [1]), g.cast(vision.embeds, g.computeDtype));
    const shape = g.concat([g.shapeOf(inputIds), g.ints([hiddenSize])], 0);
    return g.reshape(merged, shape, [inputIds.dim(0), inputIds.dim(1), hiddenSize]);
  });
}
