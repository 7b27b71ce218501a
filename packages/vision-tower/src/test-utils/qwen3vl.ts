import ort from 'onnxruntime-node';
import type { Qwen3VlVisionConfig } from '../qwen3vl/config.js';
import { qwen3VlPatchDim } from '../qwen3vl/config.js';
import { qwen3VlVisionInputs } from '../qwen3vl/inputs.js';
import { QWEN3VL_VISION_TOWER_INPUTS } from '../qwen3vl/vision-transformer.js';

export type Grid = [number, number, number];

/** Rows of a flat grid_thw list. */
export function gridsOf(flat: readonly number[]): Grid[] {
  const out: Grid[] = [];
  for (let i = 0; i < flat.length; i += 3) out.push([flat[i]!, flat[i + 1]!, flat[i + 2]!]);
  return out;
}

/** Runs the standalone Qwen3-VL tower on `pixels` for `grids`, its host inputs from `qwen3VlVisionInputs`. */
export async function runQwen3VlTower(
  s: ort.InferenceSession,
  config: Qwen3VlVisionConfig,
  pixels: Float32Array,
  grids: readonly Grid[],
): Promise<Record<string, Float32Array>> {
  const x = qwen3VlVisionInputs(grids, config);
  const out = await s.run(
    QWEN3VL_VISION_TOWER_INPUTS.feeds<ort.Tensor>({
      pixel_values: new ort.Tensor('float32', pixels, [x.numPatches, qwen3VlPatchDim(config)]),
      pos_indices: new ort.Tensor('int32', x.posIndices, x.posShape),
      pos_weights: new ort.Tensor('float32', x.posWeights, x.posShape),
      rotary_cos: new ort.Tensor('float32', x.rotaryCos, x.rotaryShape),
      rotary_sin: new ort.Tensor('float32', x.rotarySin, x.rotaryShape),
      segment_ids: new ort.Tensor('int32', x.segmentIds, [x.numPatches]),
    }),
  );
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data as Float32Array]));
}
