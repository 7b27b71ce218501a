import { type ParameterSpec, recordParameters } from '@vlmkit/onnx-graph';
import { buildBlip2QFormerModel } from './qformer.js';
import type { Blip2QFormerConfig } from './qformer-config.js';
import type { WindowQFormerConfig } from './window-config.js';
import { buildWindowQFormerDownsamplerModel } from './window-qformer.js';

export type { ParameterSpec };

/**
 * The parameters `buildBlip2QFormer` reads, under HF's module names inside
 * Blip2QFormerModel (docs/parameter-names.md): `layernorm.*`,
 * `encoder.layer.{i}.attention.*`, `encoder.layer.{i}.crossattention.*`
 * (layers i with i % crossAttentionFrequency == 0), `encoder.layer.{i}.intermediate_query.*`,
 * `encoder.layer.{i}.output_query.*`. The text path (`intermediate`, `output`,
 * only with use_qformer_text_input) is not read. A dry run of the builder
 * (vLLM: named_parameters()).
 */
export function qformerExpectedParameters(config: Blip2QFormerConfig): ParameterSpec[] {
  return recordParameters((weights) => buildBlip2QFormerModel(weights, config));
}

/**
 * The parameters `buildWindowQFormerDownsampler` reads, under HF's module
 * names inside Granite4VisionWindowQFormerDownsampler (the same in vLLM):
 * `norm.*`, `query` [1, q*q, Dv], `image_positions` [1, w*w, Dv],
 * `qformer.*` (see `qformerExpectedParameters`), `out_linear.*`. The same
 * names for every mode: deepstack and spatial projectors differ only in
 * weights. A dry run of the builder.
 */
export function expectedParameters(config: WindowQFormerConfig): ParameterSpec[] {
  return recordParameters((weights) => buildWindowQFormerDownsamplerModel(weights, config, { mode: 'area' }));
}
