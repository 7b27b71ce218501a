import {
  applyComputeDtype,
  type ComputeDType,
  contract,
  declareInputs,
  type Feeds,
  Graph,
  type Value,
  type Weights,
} from '@vlmkit/onnx-graph';
import { blockDiagonalMask } from '../ernie/attention-mask.js';
import { visionBlock } from '../ernie/vision-block.js';
import { DEFAULT_ATTENTION_OP, ERNIE_VISION_TOWER_INPUTS } from '../ernie/vision-transformer.js';
import { VisionTowerError } from '../errors.js';
import type { AttentionOp } from '../types.js';
import { type Qwen3VlVisionConfig, qwen3VlPatchDim, qwen3VlVisionHeadDim } from './config.js';
import { patchEmbed, positionEmbedding } from './embeddings.js';
import { POSITION_TAPS } from './inputs.js';
import { patchMerger } from './merger.js';

/** The tower's graph inputs, as values of the caller's graph (all but pixelValues from `qwen3VlVisionInputs`). */
export interface Qwen3VlVisionTowerInputs {
  /** [Np, C*T*p*p] flattened patches (float32 or float16; cast to the graph's compute dtype). */
  pixelValues: Value;
  /** [Np, 4] int32/int64 rows of the learned position table per patch. */
  posIndices: Value;
  /** [Np, 4] float32 bilinear weights of those rows. */
  posWeights: Value;
  /** [Np, headDim/2] float32 2D rotary tables. */
  rotaryCos: Value;
  rotarySin: Value;
  /** [Np] int32/int64 frame (temporal patch) of each patch: attention stays within it. */
  segmentIds: Value;
}

export interface Qwen3VlVisionTowerOutputs {
  /** [Np/m^2, D]: the final merger's tokens (HF pooler_output: image_embeds / video_embeds). */
  embeds: Value;
  /** One [Np/m^2, D] per deepstack layer, in block order (HF deepstack_features). */
  deepstack: Value[];
  /** [Np, Dv]: the last block's output (HF last_hidden_state). */
  hidden: Value;
}

export interface Qwen3VlVisionBuildOptions {
  /** Attention kernel (default com.microsoft MultiHeadAttention with an additive frame bias, as ERNIE's). */
  attentionOp?: AttentionOp;
  /** Scope of the tower's nodes and initializers in the caller's graph (default `visual`, HF's module name). */
  scope?: string;
}

/** `buildQwen3VlVisionTowerModel`'s options: the builder's, and the graph's compute dtype. */
export interface Qwen3VlVisionTowerModelOptions extends Qwen3VlVisionBuildOptions {
  /** The float type the tower computes in (default float32; `floatConvertPass`); inputs and outputs stay float32. */
  computeDtype?: ComputeDType | undefined;
}

/**
 * HF Qwen3VLVisionModel.forward (vLLM Qwen3_VisionTransformer). Adds the tower to `g` inside
 * `options.scope`: patch_embed + pos_embed -> blocks (ERNIE's block: LayerNorms, 2D rotary, attention per
 * frame, fc1/fc2 MLP) -> merger; after each block listed in deepstackVisualIndexes, its deepstack
 * merger. Written in float32; a 16-bit graph (`floatConvertPass`) keeps the position sum, the rotation and
 * the LayerNorms in float32 as HF does.
 */
export function buildQwen3VlVisionTower(
  g: Graph,
  weights: Weights,
  config: Qwen3VlVisionConfig,
  inputs: Qwen3VlVisionTowerInputs,
  options: Qwen3VlVisionBuildOptions = {},
): Qwen3VlVisionTowerOutputs {
  checkInputs(config, inputs);
  const op = options.attentionOp ?? DEFAULT_ATTENTION_OP;
  return g.scope(options.scope ?? 'visual', () => {
    const pixels = g.cast(inputs.pixelValues, 'float32');
    const patches = g.scope('patch_embed', () => patchEmbed(g, weights.sub('patch_embed'), config, pixels));
    const x = g.add(patches, positionEmbedding(g, weights, config, inputs.posIndices, inputs.posWeights));
    const f32 = (t: Value) => g.unsqueeze(t, [0]);
    const rotary = g.scope('rotary', () => g.inFloat32(() => ({ cos: f32(inputs.rotaryCos), sin: f32(inputs.rotarySin) })));
    const frames = blockDiagonalMask(g, inputs.segmentIds, op, x.dtype);
    const deepstack: Value[] = [];
    let h = x;
    for (let i = 0; i < config.depth; i++) {
      const name = `blocks.${i}`;
      h = g.scope(name, () => visionBlock(g, weights.sub(name), config, h, rotary, frames));
      // HF: deepstack_merger_list[deepstack_visual_indexes.index(layer)], features appended in block order.
      const j = config.deepstackVisualIndexes.indexOf(i);
      if (j >= 0) {
        const merger = `deepstack_merger_list.${j}`;
        const hi = h;
        deepstack.push(g.scope(merger, () => patchMerger(g, weights.sub(merger), config, hi, { postShuffleNorm: true })));
      }
    }
    const embeds = g.scope('merger', () => patchMerger(g, weights.sub('merger'), config, h, { postShuffleNorm: false }));
    return { embeds, deepstack, hidden: h };
  });
}

/**
 * The tower's inputs (all but pixel_values from `qwen3VlVisionInputs`), as the standalone model declares
 * them; `qwen3VlVisionTowerSizes(config)` binds `patch_dim` and `half_head_dim`.
 */
export const QWEN3VL_VISION_TOWER_INPUTS = contract({
  pixel_values: ['float32', ['num_patches', 'patch_dim'], { doc: 'the flattened patches, C*T*p*p each, in spatial-merge-window order' }],
  pos_indices: ['int32', ['num_patches', POSITION_TAPS], { doc: 'rows of the learned position table per patch (`qwen3VlVisionInputs`)' }],
  pos_weights: ['float32', ['num_patches', POSITION_TAPS], { doc: 'bilinear weights of those rows (`qwen3VlVisionInputs`)' }],
  rotary_cos: ERNIE_VISION_TOWER_INPUTS.schema.rotary_cos,
  rotary_sin: ERNIE_VISION_TOWER_INPUTS.schema.rotary_sin,
  segment_ids: ['int32', ['num_patches'], { doc: 'index of the frame (temporal patch) each patch belongs to' }],
});

/** The standalone tower's outputs: the merged tokens and one deepstack feature per deepstack layer (`counts.deepstack`). */
export const QWEN3VL_VISION_TOWER_OUTPUTS = contract({
  vision_embeds: ['float32', ['num_tokens', 'out_hidden_size'], { doc: 'the final merger: one row per m x m window' }],
  deepstack: ['float32', ['num_tokens', 'out_hidden_size'], { each: 'deepstack', name: 'deepstack_{i}', doc: 'deepstack feature i' }],
});

/** The tower's feeds by input name (`QWEN3VL_VISION_TOWER_INPUTS.feeds<T>`). */
export type Qwen3VlVisionTowerFeeds<T> = Feeds<typeof QWEN3VL_VISION_TOWER_INPUTS.schema, T>;

/** The config's sizes of the tower's inputs. */
export function qwen3VlVisionTowerSizes(config: Qwen3VlVisionConfig): { patch_dim: number; half_head_dim: number } {
  return { patch_dim: qwen3VlPatchDim(config), half_head_dim: qwen3VlVisionHeadDim(config) / 2 };
}

/**
 * The tower alone as a complete model: inputs `QWEN3VL_VISION_TOWER_INPUTS`, outputs `vision_embeds`
 * [Np/m^2, D] and `deepstack_{i}` [Np/m^2, D], float32 (computed in `options.computeDtype`).
 */
export function buildQwen3VlVisionTowerModel(
  weights: Weights,
  config: Qwen3VlVisionConfig,
  options: Qwen3VlVisionTowerModelOptions = {},
): Graph {
  const g = new Graph({ name: 'qwen3vl_vision_tower' });
  const x = declareInputs(g, QWEN3VL_VISION_TOWER_INPUTS, { sizes: qwen3VlVisionTowerSizes(config) });
  const out = buildQwen3VlVisionTower(
    g,
    weights,
    config,
    {
      pixelValues: x.pixel_values,
      posIndices: x.pos_indices,
      posWeights: x.pos_weights,
      rotaryCos: x.rotary_cos,
      rotarySin: x.rotary_sin,
      segmentIds: x.segment_ids,
    },
    options,
  );
  const O = QWEN3VL_VISION_TOWER_OUTPUTS.names;
  g.output(g.cast(out.embeds, 'float32'), O.vision_embeds);
  for (const [i, f] of out.deepstack.entries()) g.output(g.cast(f, 'float32'), O.deepstack(i));
  applyComputeDtype(g, options.computeDtype);
  return g;
}

function checkInputs(config: Qwen3VlVisionConfig, inputs: Qwen3VlVisionTowerInputs): void {
  const patchDim = qwen3VlPatchDim(config);
  const half = qwen3VlVisionHeadDim(config) / 2;
  const bad = (msg: string) => new VisionTowerError('BAD_INPUT', `Qwen3-VL vision tower: ${msg}`);
  const lastDim = (v: Value, n: number) => v.rank === 2 && (typeof v.dim(1) !== 'number' || v.dim(1) === n);
  const { pixelValues: pv, posIndices, posWeights, rotaryCos, rotarySin, segmentIds } = inputs;
  if (!lastDim(pv, patchDim) || (pv.dtype !== 'float32' && pv.dtype !== 'float16')) {
    throw bad(`pixelValues must be float32 or float16 [num_patches, ${patchDim}] (C*T*p*p), got ${pv}.`);
  }
  const isInt = (v: Value) => v.dtype === 'int32' || v.dtype === 'int64';
  if (!lastDim(posIndices, POSITION_TAPS) || !isInt(posIndices))
    throw bad(`posIndices must be int32 or int64 [num_patches, 4], got ${posIndices}.`);
  if (!lastDim(posWeights, POSITION_TAPS) || posWeights.dtype !== 'float32')
    throw bad(`posWeights must be float32 [num_patches, 4], got ${posWeights}.`);
  for (const [name, t] of [
    ['rotaryCos', rotaryCos],
    ['rotarySin', rotarySin],
  ] as const) {
    if (!lastDim(t, half)) throw bad(`${name} must be [num_patches, ${half}] (headDim/2), got ${t}.`);
  }
  if (segmentIds.rank !== 1 || !isInt(segmentIds)) throw bad(`segmentIds must be int32 or int64 [num_patches], got ${segmentIds}.`);
}
