import type { Graph, Value, Weights } from '@vlmkit/onnx-graph';

/**
 * embed_tokens, then the vision features scattered over their placeholder
 * rows: `visionPositions` [N] are flattened b * S + s indices, `visionEmbeds`
 * [N, D] their rows (HF: inputs_embeds.masked_scatter at image/video token
 * positions; N may be 0). The table is read as stored and the gathered rows
 * widened to float32; a 16-bit graph (`floatConvertPass`) reads a table in its
 * dtype as stored and casts another one whole, once at save, shared with a
 * tied LM head.
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
    const x = g.cast(g.gather(table, inputIds, 0), 'float32'); // [B, S, D]
    if (vision === undefined) return x;
    const flat = g.reshape(x, [-1, hiddenSize]);
    const merged = g.scatterND(flat, g.unsqueeze(vision.positions, [1]), vision.embeds);
    const shape = g.concat([g.shapeOf(inputIds), g.ints([hiddenSize])], 0);
    return g.reshape(merged, shape, [inputIds.dim(0), inputIds.dim(1), hiddenSize]);
  });
}
