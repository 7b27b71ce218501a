import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { Qwen3VlVisionConfig } from './config.js';

/**
 * HF/vLLM: Qwen3VLVisionPatchMerger. Each spatial-merge window of m x m consecutive patches becomes one
 * token: norm -> [N/m^2, m^2 Dv] -> linear_fc1 -> GELU (exact, whatever hidden_act says: nn.GELU()) ->
 * linear_fc2 -> [N/m^2, D]. The final merger normalizes each patch before the grouping
 * (use_postshuffle_norm false), the deepstack mergers the grouped rows after it (true).
 */
export function patchMerger(g: Graph, w: Weights, config: Qwen3VlVisionConfig, x: Value, opts: { postShuffleNorm: boolean }): Value {
  const width = config.hiddenSize * config.spatialMergeSize ** 2;
  const group = (v: Value) => g.reshape(v, [-1, width]);
  const eps = config.mergerNormEps;
  const normed = opts.postShuffleNorm ? nn.layerNorm(g, group(x), w, 'norm', eps) : group(nn.layerNorm(g, x, w, 'norm', eps));
  const h = nn.linear(g, normed, w, 'linear_fc1', { in: width, out: width });
  return nn.linear(g, g.gelu(h, 'none'), w, 'linear_fc2', { in: width, out: config.outHiddenSize });
}
