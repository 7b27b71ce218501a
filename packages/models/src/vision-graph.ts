// The graph every family's vision encoder is built in (`FamilyCheckpoint.visionGraph`).
import { applyComputeDtype, applyPasses, Graph, quantizeLinearPass } from '@vlmkit/onnx-graph';
import type { VisionBuild } from './model-load.js';

/**
 * A vision encoder graph named `name`: `body` declares its inputs and outputs in it, in float32; converted to
 * `build.computeDtype` (`floatConvertPass`; default float32), its linear layers then block-quantized with
 * `build.quantize` (`quantizeLinearPass`), then rewritten by `build.passes`.
 */
export function visionEncoderGraph(name: string, build: Partial<VisionBuild>, body: (g: Graph) => void): Graph {
  const g = new Graph({ name });
  body(g);
  applyComputeDtype(g, build.computeDtype);
  if (build.quantize !== undefined) applyPasses(g, [quantizeLinearPass(build.quantize)]);
  applyPasses(g, build.passes ?? []);
  return g;
}
