import { Graph, type Weights } from '@vlmkit/onnx-graph';
import { buildErnieResampler, type GridThw, RESAMPLER_IO, resamplerInputs } from '@vlmkit/resampler';
import { float32, type HostTensor, hostTensor, int64 } from '@vlmkit/runtime';
import {
  buildErnieVisionTower,
  ERNIE_VISION_TOWER_IO,
  ernieVisionHeadDim,
  ernieVisionInputs,
  ernieVisionTowerFeeds,
} from '@vlmkit/vision-tower';
import type { VisionBuild } from '../model-load.js';
import type { Ernie45VLConfig } from './config.js';

/** Input and output names of the ERNIE vision encoder session: the tower's inputs, the resampler's slices, both outputs. */
export const ERNIE_VISION_ENCODER_IO = {
  pixelValues: ERNIE_VISION_TOWER_IO.pixelValues,
  rotaryCos: ERNIE_VISION_TOWER_IO.rotaryCos,
  rotarySin: ERNIE_VISION_TOWER_IO.rotarySin,
  segmentIds: ERNIE_VISION_TOWER_IO.segmentIds,
  firstSlice: RESAMPLER_IO.firstSlice,
  secondSlice: RESAMPLER_IO.secondSlice,
  visionHidden: ERNIE_VISION_TOWER_IO.visionHidden,
  embeds: RESAMPLER_IO.embeds,
} as const;

/** The vision encoder's feeds by input name. */
export type ErnieVisionEncoderFeeds = Record<
  (typeof ERNIE_VISION_ENCODER_IO)['pixelValues' | 'rotaryCos' | 'rotarySin' | 'segmentIds' | 'firstSlice' | 'secondSlice'],
  HostTensor
>;

/**
 * The vision encoder session: tower then resampler, one graph.
 * Inputs `pixel_values` [Np, C*p*p], `rotary_cos`/`rotary_sin` [Np, hd/2],
 * `segment_ids` [Np] int32, `first_slice`/`second_slice` [Nt] int64;
 * outputs `vision_hidden` [Np, Dv] and `embeds` [Nt, D], float32; computed in `build.computeDtype` (default
 * float32), its linear layers block-quantized with `build.quantize`.
 */
export function buildErnieVisionEncoder(
  vision: Weights,
  resampler: Weights,
  config: Ernie45VLConfig,
  build: Partial<VisionBuild> = {},
): Graph {
  const g = new Graph({ name: 'ernie_vision_encoder', computeDtype: build.computeDtype ?? 'float32', quantize: build.quantize });
  const v = config.vision;
  const half = ernieVisionHeadDim(v) / 2;
  const io = ERNIE_VISION_ENCODER_IO;
  const pixelValues = g.input(io.pixelValues, 'float32', ['num_patches', v.inChannels * v.patchSize ** 2]);
  const rotaryCos = g.input(io.rotaryCos, 'float32', ['num_patches', half]);
  const rotarySin = g.input(io.rotarySin, 'float32', ['num_patches', half]);
  const segmentIds = g.input(io.segmentIds, 'int32', ['num_patches']);
  const firstSlice = g.input(io.firstSlice, 'int64', ['num_tokens']);
  const secondSlice = g.input(io.secondSlice, 'int64', ['num_tokens']);
  const { hidden } = buildErnieVisionTower(g, vision, v, { pixelValues, rotaryCos, rotarySin, segmentIds });
  const { embeds } = buildErnieResampler(g, resampler, config.resampler, { visionHidden: hidden, firstSlice, secondSlice });
  g.output(g.cast(hidden, 'float32'), io.visionHidden);
  g.output(g.cast(embeds, 'float32'), io.embeds);
  return g;
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
  return {
    ...ernieVisionTowerFeeds<HostTensor>({
      pixelValues: float32(pixelValues, [v.numPatches, patchDim]),
      rotaryCos: float32(v.rotaryCos, v.rotaryShape),
      rotarySin: float32(v.rotarySin, v.rotaryShape),
      segmentIds: hostTensor('int32', v.segmentIds, [v.numPatches]),
    }),
    [ERNIE_VISION_ENCODER_IO.firstSlice]: int64(r.firstSlice, [r.numTokens]),
    [ERNIE_VISION_ENCODER_IO.secondSlice]: int64(r.secondSlice, [r.numTokens]),
  };
}
