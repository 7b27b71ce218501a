import type { GridThw } from '@vlmkit/config';
import { declareInputs, type Feeds, type Graph, type Weights } from '@vlmkit/onnx-graph';
import { float32, type HostTensor, hostTensor } from '@vlmkit/runtime';
import {
  buildQwen3VlVisionTower,
  QWEN3VL_VISION_TOWER_INPUTS,
  QWEN3VL_VISION_TOWER_OUTPUTS,
  qwen3VlPatchDim,
  qwen3VlVisionInputs,
  qwen3VlVisionTowerSizes,
} from '@vlmkit/vision-tower';
import type { VisionBuild } from '../model-load.js';
import { visionEncoderGraph } from '../vision-graph.js';
import type { Qwen3VLConfig } from './config.js';

/** The vision encoder session's inputs and outputs: the tower's (`vision_embeds`, `deepstack_{i}`). */
export const QWEN3VL_VISION_ENCODER_INPUTS = QWEN3VL_VISION_TOWER_INPUTS;
export const QWEN3VL_VISION_ENCODER_OUTPUTS = QWEN3VL_VISION_TOWER_OUTPUTS;

/** The vision encoder's feeds by input name. */
export type Qwen3VlVisionEncoderFeeds = Feeds<typeof QWEN3VL_VISION_ENCODER_INPUTS.schema, HostTensor>;

/**
 * The vision encoder session: the tower with its merger and deepstack mergers (HF Qwen3VLVisionModel), one
 * graph. Outputs `vision_embeds` [Nt, D] and one `deepstack_{i}` [Nt, D] per deepstack layer, float32;
 * computed in `build.computeDtype`, linear layers block-quantized with `build.quantize`.
 */
export function buildQwen3VlVisionEncoder(config: Qwen3VLConfig, weights: { vision: Weights }, build: Partial<VisionBuild> = {}): Graph {
  return visionEncoderGraph('qwen3vl_vision_encoder', build, (g) => {
    const x = declareInputs(g, QWEN3VL_VISION_ENCODER_INPUTS, { sizes: qwen3VlVisionTowerSizes(config.vision) });
    const out = buildQwen3VlVisionTower(g, weights.vision, config.vision, {
      pixelValues: x.pixel_values,
      posIndices: x.pos_indices,
      posWeights: x.pos_weights,
      rotaryCos: x.rotary_cos,
      rotarySin: x.rotary_sin,
      segmentIds: x.segment_ids,
    });
    const O = QWEN3VL_VISION_ENCODER_OUTPUTS.names;
    g.output(g.cast(out.embeds, 'float32'), O.vision_embeds);
    out.deepstack.forEach((f, i) => {
      g.output(g.cast(f, 'float32'), O.deepstack(i));
    });
  });
}

/** Host-side feeds of the vision encoder for one modality's pixel values [Np, C*T*p*p] and grids. */
export function qwen3VlVisionEncoderFeeds(
  pixelValues: Float32Array,
  grids: readonly GridThw[],
  config: Qwen3VLConfig,
): Qwen3VlVisionEncoderFeeds {
  const v = qwen3VlVisionInputs(grids, config.vision);
  return QWEN3VL_VISION_ENCODER_INPUTS.feeds<HostTensor>({
    pixel_values: float32(pixelValues, [v.numPatches, qwen3VlPatchDim(config.vision)]),
    pos_indices: hostTensor('int32', v.posIndices, v.posShape),
    pos_weights: float32(v.posWeights, v.posShape),
    rotary_cos: float32(v.rotaryCos, v.rotaryShape),
    rotary_sin: float32(v.rotarySin, v.rotaryShape),
    segment_ids: hostTensor('int32', v.segmentIds, [v.numPatches]),
  });
}
