import { contract, declareInputs, type Feeds, type Graph, required, type Weights } from '@vlmkit/onnx-graph';
import { buildErnieResampler, type GridThw, RESAMPLER_INPUTS, RESAMPLER_OUTPUTS, resamplerInputs } from '@vlmkit/resampler';
import { float32, type HostTensor, hostTensor, int64 } from '@vlmkit/runtime';
import {
  buildErnieVisionTower,
  ERNIE_VISION_TOWER_INPUTS,
  ERNIE_VISION_TOWER_OUTPUTS,
  ernieVisionInputs,
  ernieVisionTowerSizes,
} from '@vlmkit/vision-tower';
import type { VisionBuild } from '../model-load.js';
import { visionEncoderGraph } from '../vision-graph.js';
import type { Ernie45VLConfig } from './config.js';

/**
 * The vision encoder session's inputs: the tower's (`ERNIE_VISION_TOWER_INPUTS`), then the resampler's
 * slices, declared whether or not the config slices temporally (the resampler reads them only then).
 */
export const ERNIE_VISION_ENCODER_INPUTS = contract({
  ...ERNIE_VISION_TOWER_INPUTS.schema,
  first_slice: required(RESAMPLER_INPUTS.schema.first_slice),
  second_slice: required(RESAMPLER_INPUTS.schema.second_slice),
});

/** Its outputs: the tower's last hidden state and the resampler's embeddings. */
export const ERNIE_VISION_ENCODER_OUTPUTS = contract({ ...ERNIE_VISION_TOWER_OUTPUTS.schema, ...RESAMPLER_OUTPUTS.schema });

/** What the vision encoder reads: the tower's and the resampler's parameters. */
export interface ErnieVisionWeights {
  readonly vision: Weights;
  readonly resampler: Weights;
}

/** The vision encoder's feeds by input name. */
export type ErnieVisionEncoderFeeds = Feeds<typeof ERNIE_VISION_ENCODER_INPUTS.schema, HostTensor>;

/**
 * The vision encoder session: tower then resampler, one graph.
 * Inputs `pixel_values` [Np, C*p*p], `rotary_cos`/`rotary_sin` [Np, hd/2],
 * `segment_ids` [Np] int32, `first_slice`/`second_slice` [Nt] int64;
 * outputs `vision_hidden` [Np, Dv] and `embeds` [Nt, D], float32; computed in `build.computeDtype` (default
 * float32), its linear layers block-quantized with `build.quantize` (`quantizeLinearPass`).
 */
export function buildErnieVisionEncoder(config: Ernie45VLConfig, weights: ErnieVisionWeights, build: Partial<VisionBuild> = {}): Graph {
  return visionEncoderGraph('ernie_vision_encoder', build, (g) => {
    const v = config.vision;
    const x = declareInputs(g, ERNIE_VISION_ENCODER_INPUTS, { sizes: ernieVisionTowerSizes(v) });
    const O = ERNIE_VISION_ENCODER_OUTPUTS.names;
    const { hidden } = buildErnieVisionTower(g, weights.vision, v, {
      pixelValues: x.pixel_values,
      rotaryCos: x.rotary_cos,
      rotarySin: x.rotary_sin,
      segmentIds: x.segment_ids,
    });
    const { embeds } = buildErnieResampler(g, weights.resampler, config.resampler, {
      visionHidden: hidden,
      firstSlice: x.first_slice,
      secondSlice: x.second_slice,
    });
    g.output(g.cast(hidden, 'float32'), O.vision_hidden);
    g.output(g.cast(embeds, 'float32'), O.embeds);
  });
}

/** Host-side feeds of the vision encoder for one modality's pixel values and grids. */
export function ernieVisionEncoderFeeds(
  pixelValues: Float32Array,
  grids: readonly GridThw[],
  config: Ernie45VLConfig,
): ErnieVisionEncoderFeeds {
  const v = ernieVisionInputs(grids, config.vision);
  const r = resamplerInputs(grids, config.resampler);
  const patchDim = config.vision.inChannels * config.vision.patchSize ** 2;
  return ERNIE_VISION_ENCODER_INPUTS.feeds<HostTensor>({
    pixel_values: float32(pixelValues, [v.numPatches, patchDim]),
    rotary_cos: float32(v.rotaryCos, v.rotaryShape),
    rotary_sin: float32(v.rotarySin, v.rotaryShape),
    segment_ids: hostTensor('int32', v.segmentIds, [v.numPatches]),
    first_slice: int64(r.firstSlice, [r.numTokens]),
    second_slice: int64(r.secondSlice, [r.numTokens]),
  });
}
