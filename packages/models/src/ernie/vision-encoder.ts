import { Graph, type Weights } from '@vlmkit/onnx-graph';
import { buildErnieResampler, type GridThw, resamplerInputs } from '@vlmkit/resampler';
import { float32, type HostTensor, hostTensor, int64 } from '@vlmkit/runtime';
import { buildErnieVisionTower, ernieVisionHeadDim, ernieVisionInputs } from '@vlmkit/vision-tower';
import type { Ernie45VLConfig } from './config.js';

/**
 * The vision encoder session: tower then resampler, one graph.
 * Inputs `pixel_values` [Np, C*p*p], `rotary_cos`/`rotary_sin` [Np, hd/2],
 * `segment_ids` [Np] int32, `first_slice`/`second_slice` [Nt] int64;
 * outputs `vision_hidden` [Np, Dv] and `embeds` [Nt, D].
 */
export function buildErnieVisionEncoder(vision: Weights, resampler: Weights, config: Ernie45VLConfig): Graph {
  const g = new Graph({ name: 'ernie_vision_encoder' });
  const v = config.vision;
  const half = ernieVisionHeadDim(v) / 2;
  const pixelValues = g.input('pixel_values', 'float32', ['num_patches', v.inChannels * v.patchSize ** 2]);
  const rotaryCos = g.input('rotary_cos', 'float32', ['num_patches', half]);
  const rotarySin = g.input('rotary_sin', 'float32', ['num_patches', half]);
  const segmentIds = g.input('segment_ids', 'int32', ['num_patches']);
  const firstSlice = g.input('first_slice', 'int64', ['num_tokens']);
  const secondSlice = g.input('second_slice', 'int64', ['num_tokens']);
  const { hidden } = buildErnieVisionTower(g, vision, v, { pixelValues, rotaryCos, rotarySin, segmentIds });
  const { embeds } = buildErnieResampler(g, resampler, config.resampler, { visionHidden: hidden, firstSlice, secondSlice });
  g.output(hidden, 'vision_hidden');
  g.output(embeds, 'embeds');
  return g;
}

/** Host-side feeds of the vision encoder for one modality's pixel values and grids. */
export function visionEncoderFeeds(
  pixelValues: Float32Array,
  grids: readonly GridThw[],
  config: Ernie45VLConfig,
): Record<string, HostTensor> {
  const v = ernieVisionInputs(grids, config.vision);
  const r = resamplerInputs(grids, config.resampler);
  const patchDim = config.vision.inChannels * config.vision.patchSize ** 2;
  return {
    pixel_values: float32(pixelValues, [v.numPatches, patchDim]),
    rotary_cos: float32(v.rotaryCos, v.rotaryShape),
    rotary_sin: float32(v.rotarySin, v.rotaryShape),
    segment_ids: hostTensor('int32', v.segmentIds, [v.numPatches]),
    first_slice: int64(r.firstSlice, [r.numTokens]),
    second_slice: int64(r.secondSlice, [r.numTokens]),
  };
}
