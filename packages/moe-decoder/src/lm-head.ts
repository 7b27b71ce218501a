import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';

/**
 * logits = h W^T with W [V, D]: Gemm with transB, so a tied [V, D] table is
 * never transposed into a copy. Tied: W is `embed_tokens.weight` itself
 * (one initializer), whatever `lm_head.weight` the weights also carry (a
 * mapper may hand an equal but distinct TensorRef, which would be stored
 * and loaded twice). Shared by the ERNIE and Granite decoders. The Gemm is
 * marked `nn.LM_HEAD`: `quantizeLinearPass` block-quantizes W as its `lmHead`
 * says (a tied table is then stored twice: float for the lookup, packed for
 * the head).
 */
export function lmHead(
  g: Graph,
  weights: Weights,
  config: { vocabSize: number; hiddenSize: number; tieWordEmbeddings: boolean },
  h: Value,
): Value {
  const { vocabSize: V, hiddenSize: D } = config;
  const name = config.tieWordEmbeddings ? 'embed_tokens.weight' : 'lm_head.weight';
  const w = nn.paramAs(g, weights, name, [V, D], h);
  return g.scope('lm_head', () => {
    const flat = g.mark(g.gemm(g.reshape(h, [-1, D]), w, undefined, { transB: true }), nn.LM_HEAD);
    const shape = g.concat([g.shapeOf(h, 0, 2), g.ints([V])], 0);
    return g.reshape(flat, shape, [h.dim(0), h.dim(1), V]);
  });
}
