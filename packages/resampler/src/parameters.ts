import { type ErnieResamplerConfig, validateResamplerConfig } from './config.js';

/** One parameter the resampler reads: its mapped name and shape (Linear weights in PyTorch [out, in] layout). */
export interface ParameterSpec {
  readonly name: string;
  readonly shape: readonly number[];
}

/**
 * The parameters `buildErnieResampler` reads, under vLLM's names
 * (docs/parameter-names.md; the hub's `spatial_linear.0` is `spatial_linear1`, ...).
 * Without temporal conv the temporal_* parameters are not needed.
 */
export function expectedParameters(config: ErnieResamplerConfig): ParameterSpec[] {
  const {
    visionHiddenSize: dv,
    textHiddenSize: d,
    spatialMergeSize: s,
    temporalMergeSize: t,
    useTemporalConv,
  } = validateResamplerConfig(config);
  const spatial = dv * s * s; // vLLM: spatial_dim
  const temporal = spatial * t; // vLLM: temporal_dim
  const specs: ParameterSpec[] = [
    { name: 'spatial_linear1.weight', shape: [spatial, spatial] },
    { name: 'spatial_linear1.bias', shape: [spatial] },
    { name: 'spatial_linear2.weight', shape: [spatial, spatial] },
    { name: 'spatial_linear2.bias', shape: [spatial] },
    { name: 'spatial_norm.weight', shape: [spatial] },
    { name: 'spatial_norm.bias', shape: [spatial] },
  ];
  if (useTemporalConv) {
    specs.push(
      { name: 'temporal_linear1.weight', shape: [spatial, temporal] },
      { name: 'temporal_linear1.bias', shape: [spatial] },
      { name: 'temporal_linear2.weight', shape: [spatial, spatial] },
      { name: 'temporal_linear2.bias', shape: [spatial] },
      { name: 'temporal_norm.weight', shape: [spatial] },
      { name: 'temporal_norm.bias', shape: [spatial] },
    );
  }
  specs.push({ name: 'mlp.weight', shape: [d, spatial] }, { name: 'mlp.bias', shape: [d] }, { name: 'after_norm.weight', shape: [d] });
  return specs;
}
