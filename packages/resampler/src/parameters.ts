import { type ParameterSpec, recordParameters } from '@vlmkit/onnx-graph';
import type { ErnieResamplerConfig } from './config.js';
import { buildErnieResamplerModel } from './resampler.js';

export type { ParameterSpec };

/**
 * The parameters `buildErnieResampler` reads, under vLLM's names
 * (docs/parameter-names.md; the hub's `spatial_linear.0` is `spatial_linear1`, ...),
 * Linear weights in PyTorch [out, in] layout. Without temporal conv the
 * temporal_* parameters are not read. A dry run of the builder (vLLM: named_parameters()).
 */
export function expectedParameters(config: ErnieResamplerConfig): ParameterSpec[] {
  return recordParameters((weights) => buildErnieResamplerModel(weights, config));
}
