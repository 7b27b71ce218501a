import type { Graph, Value, Weights } from '@vlmkit/onnx-graph';
import { type SiglipVisionConfig, siglipNumPatches } from './config.js';

/**
 * vLLM/HF: SiglipVisionEmbeddings. Conv (kernel = stride = patch) on
 * [B, C, H, W] -> [B, Np, D] in raster order, plus the learned position
 * embedding of each patch (no interpolation: inputs are imageSize square).
 */
export function siglipVisionEmbeddings(g: Graph, w: Weights, config: SiglipVisionConfig, pixelValues: Value): Value {
  const { hiddenSize: d, numChannels: c, patchSize: p } = config;
  const n = siglipNumPatches(config);
  // Parameters in the input's dtype (the compute dtype; a checkpoint already in it is used as stored).
  const as = (v: Value) => (v.dtype === pixelValues.dtype ? v : g.cast(v, pixelValues.dtype));
  const weight = as(g.param(w, 'patch_embedding.weight', [d, c, p, p]));
  const bias = as(g.param(w, 'patch_embedding.bias', [d]));
  const pos = as(g.param(w, 'position_embedding.weight', [n, d]));
  const patches = g.scope('patch_embedding', () => {
    const conv = g.conv(pixelValues, weight, bias, { strides: [p, p] });
    // [B, D, H/p, W/p] -> [B, D, Np] -> [B, Np, D]
    return g.transpose(g.reshape(conv, [0, d, n]), [0, 2, 1]);
  });
  return g.scope('position_embedding', () => g.add(patches, pos));
}
