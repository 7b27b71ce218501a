import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { type Qwen3VlVisionConfig, qwen3VlPatchDim } from './config.js';

/**
 * HF/vLLM: Qwen3VLVisionPatchEmbed. A Conv3d whose kernel equals its stride (temporalPatchSize x p x p)
 * over one flattened patch per row is a linear map: the weight [D, C, T, p, p] (as the checkpoint stores
 * it) flattened to [D, C*T*p*p] in the row's (C, T, p, p) order, plus the bias.
 */
export function patchEmbed(g: Graph, w: Weights, config: Qwen3VlVisionConfig, pixels: Value): Value {
  const { hiddenSize: d, inChannels: c, temporalPatchSize: t, patchSize: p } = config;
  const weight = nn.paramAs(g, w, 'proj.weight', [d, c, t, p, p], pixels);
  const bias = nn.paramAs(g, w, 'proj.bias', [d], pixels);
  return g.scope('proj', () => g.add(g.matmul(pixels, g.transpose(g.reshape(weight, [d, qwen3VlPatchDim(config)]), [1, 0])), bias));
}

/**
 * HF Qwen3VLVisionModel.forward: `(pos_embed(interp_indices) * interp_weights[:, :, None]).sum(1)`, the
 * learned grid (`pos_embed.weight` [side^2, D]) resampled to each patch by its 4 taps from
 * `positionInterpolation`. In float32 in a 16-bit graph too (HF multiplies by float32 weights, which
 * promotes the sum to float32, then rounds once: `.to(hidden_states.dtype)`).
 */
export function positionEmbedding(g: Graph, w: Weights, config: Qwen3VlVisionConfig, posIndices: Value, posWeights: Value): Value {
  const table = g.param(w, 'pos_embed.weight', [config.numPositionEmbeddings, config.hiddenSize]);
  return g.scope('pos_embed', () =>
    g.inFloat32(() => {
      const rows = g.gather(g.cast(table, 'float32'), posIndices, 0); // [Np, 4, D]
      const weighted = g.mul(rows, g.unsqueeze(g.cast(posWeights, 'float32'), [2]));
      return g.reduceSum(weighted, [1], false);
    }),
  );
}
