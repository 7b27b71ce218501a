import type { Weights } from '@vlmkit/onnx-graph';
import type { Checkpoint } from '@vlmkit/safetensors';
import { type MappingReport, mapErnie45VL, mapGranite4Vision } from '@vlmkit/weight-mapper';
import type { ErnieTextConfig } from '../ernie/config.js';
import { ernieTextExpectedParameters } from '../ernie/parameters.js';
import type { GraniteTextConfig } from '../granite/config.js';
import { graniteTextExpectedParameters } from '../granite/parameters.js';

/** A whole-model checkpoint mapped for the ERNIE decoder alone: its parameter list and config, no vision components. */
export async function mapErnieDecoder(ckpt: Checkpoint, config: ErnieTextConfig): Promise<{ decoder: Weights; report: MappingReport }> {
  const parameters = ernieTextExpectedParameters(config);
  const { decoder, report } = await mapErnie45VL(ckpt, {
    vision: { parameters: [] },
    resampler: { parameters: [] },
    decoder: { parameters, config },
  });
  return { decoder, report };
}

/** A whole-model checkpoint mapped for the Granite decoder alone. */
export async function mapGraniteDecoder(ckpt: Checkpoint, config: GraniteTextConfig): Promise<{ decoder: Weights; report: MappingReport }> {
  const { decoder, report } = await mapGranite4Vision(ckpt, {
    vision: { parameters: [] },
    projectors: { parameters: [] },
    decoder: { parameters: graniteTextExpectedParameters(config), config },
  });
  return { decoder, report };
}
