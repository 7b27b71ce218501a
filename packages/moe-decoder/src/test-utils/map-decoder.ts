import { join } from 'node:path';
import type { Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { type MappingReport, mapErnie45VL, mapGranite4Vision } from '@vlmkit/weight-mapper';
import { type ErnieTextConfig, ernieTextConfigFromHf } from '../ernie/config.js';
import { ernieTextExpectedParameters } from '../ernie/parameters.js';
import { type GraniteTextConfig, graniteTextConfigFromHf } from '../granite/config.js';
import { graniteDeepstackLevels } from '../granite/levels.js';
import { graniteTextExpectedParameters } from '../granite/parameters.js';
import { FIXTURES, readJson } from './fixtures.js';

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

/** Both tiny fixtures' decoders, mapped: configs, weights, Granite's deepstack levels; close `checkpoints` after. */
export async function tinyDecoders(): Promise<{
  ernie: ErnieTextConfig;
  ernieWeights: Weights;
  granite: GraniteTextConfig;
  graniteWeights: Weights;
  levels: number[];
  checkpoints: Checkpoint[];
}> {
  const ernie = ernieTextConfigFromHf(await readJson('ernie-tiny', 'config.json'));
  const ec = await Checkpoint.open(join(FIXTURES, 'ernie-tiny'));
  const { decoder: ernieWeights } = await mapErnieDecoder(ec, ernie);
  const graniteTop = await readJson('granite-tiny', 'config.json');
  const granite = graniteTextConfigFromHf(graniteTop);
  const gc = await Checkpoint.open(join(FIXTURES, 'granite-tiny'));
  const { decoder: graniteWeights } = await mapGraniteDecoder(gc, granite);
  return { ernie, ernieWeights, granite, graniteWeights, levels: graniteDeepstackLevels(graniteTop), checkpoints: [ec, gc] };
}
