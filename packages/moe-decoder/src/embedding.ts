import { dtypeSize, type Graph, type Value, type Weights } from '@vlmkit/onnx-graph';

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
  const stored = g.param(w, 'embed_tokens.weight', [vocabSize, hiddenSize]);
  // A wider table (float32 for 16-bit compute) is cast whole, once at save: stored in the compute dtype and,
  // tied, shared with the LM head's cast of it (one Cast per initializer and dtype). A narrower one (bf16
  // stored, float32 compute) is read as stored and only the gathered rows are widened.
  const table = dtypeSize(stored.dtype) > dtypeSize(g.computeDtype) ? g.cast(stored, g.computeDtype) : stored;
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
