import { type GraniteTextConfig, graniteTextExpectedParameters } from '@vlmkit/moe-decoder';
import { recordComponentParameters, type Weights } from '@vlmkit/onnx-graph';
import type { Checkpoint } from '@vlmkit/safetensors';
import { expectedSiglipVisionParameters } from '@vlmkit/vision-tower';
import { type Granite4VisionComponents, type MapOptions, type MappingReport, mapGranite4Vision } from '@vlmkit/weight-mapper';
import type { Granite4VisionConfig } from './config.js';
import { buildGraniteVisionEncoder } from './vision-encoder.js';

/**
 * What the mapper takes for Granite 4 Vision: the SigLIP tower's and the
 * decoder's parameter lists (dry runs of their builders), the projectors'
 * as the vision encoder reads them (each window Q-Former under its module
 * name, `image_newline`: a dry run of `buildGraniteVisionEncoder`), and the
 * decoder's parsed config. Nothing is parsed here.
 */
export function graniteComponents(config: Granite4VisionConfig, text: GraniteTextConfig): Granite4VisionComponents {
  const encoder = recordComponentParameters(['vision', 'projectors'], (w) => buildGraniteVisionEncoder(config, w));
  return {
    vision: { parameters: expectedSiglipVisionParameters(config.vision) },
    projectors: { parameters: encoder.projectors },
    decoder: { parameters: graniteTextExpectedParameters(text), config: text },
  };
}

/** The checkpoint mapped onto the SigLIP tower's, the projectors' and the decoder's parameters (nothing read yet). */
export function loadGraniteWeights(
  ckpt: Checkpoint,
  config: Granite4VisionConfig,
  text: GraniteTextConfig,
  options: MapOptions = {},
): Promise<{ vision: Weights; projectors: Weights; decoder: Weights; report: MappingReport }> {
  return mapGranite4Vision(ckpt, graniteComponents(config, text), options);
}
