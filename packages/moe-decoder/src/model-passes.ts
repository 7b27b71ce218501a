import { applyPasses, type Graph, quantizeLinearPass } from '@vlmkit/onnx-graph';
import type { DecoderModelOptions } from './types.js';

/** What a complete step graph's options ask of the graph built: its `passes` in order, then `quantize`. */
export function rewriteDecoderModel(g: Graph, options: Pick<DecoderModelOptions, 'passes' | 'quantize'>): Graph {
  applyPasses(g, options.passes ?? []);
  if (options.quantize !== undefined) applyPasses(g, [quantizeLinearPass(options.quantize)]);
  return g;
}
