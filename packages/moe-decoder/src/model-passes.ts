import { applyPasses, type Graph, quantizeLinearPass } from '@vlmkit/onnx-graph';
import type { DecoderModelOptions } from './types.js';

/**
 * What a complete step graph's options ask of the graph built: `quantize`, then its `passes` in order (as the
 * decode loop does: `qmoeExpertsPass` makes quantized experts one QMoE).
 */
export function rewriteDecoderModel(g: Graph, options: Pick<DecoderModelOptions, 'passes' | 'quantize'>): Graph {
  if (options.quantize !== undefined) applyPasses(g, [quantizeLinearPass(options.quantize)]);
  applyPasses(g, options.passes ?? []);
  return g;
}
