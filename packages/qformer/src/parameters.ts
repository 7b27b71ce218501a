import { type ParameterSpec, recordParameters } from '@vlmkit/onnx-graph';
import { buildBlip2QFormerModel } from './qformer.js';
import type { Blip2QFormerConfig } from './qformer-config.js';
import type { WindowQFormerConfig } from './window-config.js';
import { buildWindowQFormerDownsamplerModel } from './window-qformer.js';

export type { ParameterSpec };

/**
 * The parameters `buildBlip2QFormer` reads, under HF's module names inside Blip2QFormerModel
 * (listed in docs/parameter-names.md); the text path (`intermediate`, `output`) is not read.
 * A dry run of the builder, so the list is the builder's own (vLLM: named_parameters()).
 */
export function qformerExpectedParameters(config: Blip2QFormerConfig): ParameterSpec[] {
  return recordParameters((weights) => buildBlip2QFormerModel(weights, config));
}

/**
 * The parameters `buildWindowQFormerDownsampler` reads, under HF's (and vLLM's) module names inside
 * Granite4VisionWindowQFormerDownsampler (docs/parameter-names.md). The same names for every mode:
 * deepstack and spatial projectors differ only in weights. A dry run of the builder.
 */
export function expectedParameters(config: WindowQFormerConfig): ParameterSpec[] {
  return recordParameters((weights) => buildWindowQFormerDownsamplerModel(weights, config, { mode: 'area' }));
}
