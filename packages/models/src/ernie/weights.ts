import { ernieTextExpectedParameters } from '@vlmkit/moe-decoder';
import type { Weights } from '@vlmkit/onnx-graph';
import { expectedParameters as resamplerParameters } from '@vlmkit/resampler';
import type { Checkpoint } from '@vlmkit/safetensors';
import { expectedErnieVisionParameters } from '@vlmkit/vision-tower';
import { type Ernie45VlComponents, type MapOptions, type MappingReport, mapErnie45VL } from '@vlmkit/weight-mapper';
import type { Ernie45VLConfig } from './config.js';

/**
 * What the mapper takes for ERNIE-4.5-VL: each component's parameter list
 * (a dry run of its builder) and the decoder's parsed config. Nothing is
 * parsed here: `config` is the model's config, built from the components'.
 */
export function ernieComponents(config: Ernie45VLConfig): Ernie45VlComponents {
  return {
    vision: { parameters: expectedErnieVisionParameters(config.vision) },
    resampler: { parameters: resamplerParameters(config.resampler) },
    decoder: {
      parameters: ernieTextExpectedParameters(config.text),
      config: config.text,
    },
  };
}

/** The checkpoint mapped onto the vision tower's, resampler's and decoder's parameters (nothing read yet). */
export function loadErnieWeights(
  ckpt: Checkpoint,
  config: Ernie45VLConfig,
  options: MapOptions = {},
): Promise<{ vision: Weights; resampler: Weights; decoder: Weights; report: MappingReport }> {
  return mapErnie45VL(ckpt, ernieComponents(config), options);
}
