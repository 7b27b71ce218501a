import {
  applyComputeDtype,
  type ComputeDType,
  contract,
  declareInputs,
  type Feeds,
  Graph,
  nn,
  type Value,
  type Weights,
} from '@vlmkit/onnx-graph';
import { VisionTowerError } from '../errors.js';
import type { AttentionOp } from '../types.js';
import { blockDiagonalMask } from './attention-mask.js';
import { type ErnieVisionConfig, ernieVisionHeadDim } from './config.js';
import { visionBlock } from './vision-block.js';

/** The tower's graph inputs, as values of the caller's graph. */
export interface ErnieVisionTowerInputs {
  /** [Np, C*p*p] flattened patches (float32 or float16; cast to the graph's compute dtype). */
  pixelValues: Value;
  /** [Np, headDim/2] per-patch tables from `ernieVisionInputs` (float32: the rotation runs in float32). */
  rotaryCos: Value;
  rotarySin: Value;
  /** [Np] int32/int64 frame ids from `ernieVisionInputs`. */
  segmentIds: Value;
}

export interface ErnieVisionTowerOutputs {
  /** [Np, Dv] in the graph's compute dtype, after the final LayerNorm `ln`. */
  hidden: Value;
}

export interface ErnieVisionBuildOptions {
  /**
   * Attention kernel: ONNX opset-23 `Attention` with a bool frame mask, or
   * com.microsoft `MultiHeadAttention` with an additive bias (default: the
   * faster on ORT CPU, see README).
   */
  attentionOp?: AttentionOp;
  /** Scope of the tower's nodes and initializers in the caller's graph (default `vision_tower`). */
  scope?: string;
}

/** `buildErnieVisionTowerModel`'s options: the builder's, and the graph's compute dtype. */
export interface ErnieVisionTowerModelOptions extends ErnieVisionBuildOptions {
  /**
   * The float type the tower computes in (default 'float32': built in it, then converted by onnx-graph's
   * `floatConvertPass`); inputs and `vision_hidden` stay float32.
   */
  computeDtype?: ComputeDType | undefined;
}

export const DEFAULT_ATTENTION_OP: AttentionOp = 'MultiHeadAttention';

/** vLLM: Ernie4_5_VisionPatchEmbed. A bias-free linear on flattened patches. */
export function patchEmbed(g: Graph, w: Weights, config: ErnieVisionConfig, pixelValues: Value): Value {
  const { hiddenSize: d, inChannels: c, patchSize: p } = config;
  return nn.linear(g, pixelValues, w, 'proj', { bias: false, in: c * p * p, out: d });
}

/**
 * vLLM: Ernie4_5_VisionTransformer.forward. Adds the tower to `g` inside
 * `options.scope`: patch_embed -> blocks (2D rotary, attention per frame) -> ln.
 * Written in float32; in a 16-bit graph (`floatConvertPass`) the pixels are
 * cast at entry, and LayerNorms and the rotation run in float32 inside (HF:
 * `apply_rotary_pos_emb_vision` rotates `q.float()`).
 */
export function buildErnieVisionTower(
  g: Graph,
  weights: Weights,
  config: ErnieVisionConfig,
  inputs: ErnieVisionTowerInputs,
  options: ErnieVisionBuildOptions = {},
): ErnieVisionTowerOutputs {
  checkInputs(config, inputs);
  const op = options.attentionOp ?? DEFAULT_ATTENTION_OP;
  return g.scope(options.scope ?? 'vision_tower', () => {
    const pixels = g.cast(inputs.pixelValues, 'float32');
    const x = g.scope('patch_embed', () => patchEmbed(g, weights.sub('patch_embed'), config, pixels));
    // The rotary tables stay float32 in a 16-bit graph too (`g.inFloat32`; HF rotates in float32).
    const f32 = (t: Value) => g.unsqueeze(t, [0]);
    const rotary = g.scope('rotary', () => g.inFloat32(() => ({ cos: f32(inputs.rotaryCos), sin: f32(inputs.rotarySin) })));
    const frames = blockDiagonalMask(g, inputs.segmentIds, op, x.dtype);
    let h = x;
    for (let i = 0; i < config.depth; i++) {
      const name = `blocks.${i}`;
      h = g.scope(name, () => visionBlock(g, weights.sub(name), config, h, rotary, frames));
    }
    return { hidden: nn.layerNorm(g, h, weights, 'ln', config.finalNormEps) };
  });
}

/**
 * The tower's inputs (all from `ernieVisionInputs`), as the standalone model and the ERNIE vision encoder
 * declare them; `ernieVisionTowerSizes(config)` binds `patch_dim` and `half_head_dim`.
 */
export const ERNIE_VISION_TOWER_INPUTS = contract({
  pixel_values: ['float32', ['num_patches', 'patch_dim'], { doc: 'the flattened patches, C*p*p each' }],
  rotary_cos: ['float32', ['num_patches', 'half_head_dim'], { doc: 'per-patch 2D rotary cos table (`ernieVisionInputs`)' }],
  rotary_sin: ['float32', ['num_patches', 'half_head_dim'], { doc: 'per-patch 2D rotary sin table (`ernieVisionInputs`)' }],
  segment_ids: ['int32', ['num_patches'], { doc: 'index of the frame each patch belongs to' }],
});

/** The standalone tower's output: the last hidden state [Np, Dv]. */
export const ERNIE_VISION_TOWER_OUTPUTS = contract({ vision_hidden: ['float32', ['num_patches', 'vision_hidden_size']] });

/** The config's sizes of the tower's inputs. */
export function ernieVisionTowerSizes(config: ErnieVisionConfig): { patch_dim: number; half_head_dim: number } {
  return { patch_dim: config.inChannels * config.patchSize ** 2, half_head_dim: ernieVisionHeadDim(config) / 2 };
}

/** The tower's feeds by input name, as tensors of the caller's type (`ERNIE_VISION_TOWER_INPUTS.feeds<T>`). */
export type ErnieVisionTowerFeeds<T> = Feeds<typeof ERNIE_VISION_TOWER_INPUTS.schema, T>;

/**
 * The tower alone as a complete model. Inputs: `pixel_values` [Np, C*p*p]
 * float32, `rotary_cos` / `rotary_sin` [Np, headDim/2] float32, `segment_ids`
 * [Np] int32 (all from `ernieVisionInputs`). Output: `vision_hidden` [Np, Dv] float32
 * (computed in `options.computeDtype`).
 */
export function buildErnieVisionTowerModel(weights: Weights, config: ErnieVisionConfig, options: ErnieVisionTowerModelOptions = {}): Graph {
  const g = new Graph({ name: 'ernie_vision_tower' });
  const x = declareInputs(g, ERNIE_VISION_TOWER_INPUTS, { sizes: ernieVisionTowerSizes(config) });
  const inputs: ErnieVisionTowerInputs = {
    pixelValues: x.pixel_values,
    rotaryCos: x.rotary_cos,
    rotarySin: x.rotary_sin,
    segmentIds: x.segment_ids,
  };
  const { hidden } = buildErnieVisionTower(g, weights, config, inputs, options);
  g.output(hidden, ERNIE_VISION_TOWER_OUTPUTS.names.vision_hidden);
  applyComputeDtype(g, options.computeDtype);
  return g;
}

function checkInputs(config: ErnieVisionConfig, inputs: ErnieVisionTowerInputs): void {
  const patchDim = config.inChannels * config.patchSize ** 2;
  const half = ernieVisionHeadDim(config) / 2;
  const { pixelValues: pv, rotaryCos, rotarySin, segmentIds } = inputs;
  const bad = (msg: string) => new VisionTowerError('BAD_INPUT', `ERNIE vision tower: ${msg}`);
  if (pv.rank !== 2 || (typeof pv.dim(1) === 'number' && pv.dim(1) !== patchDim)) {
    throw bad(`pixelValues must be [num_patches, ${patchDim}] (C*p*p), got ${pv}.`);
  }
  if (pv.dtype !== 'float32' && pv.dtype !== 'float16') throw bad(`pixelValues must be float32 or float16, got ${pv}.`);
  for (const [name, t] of [
    ['rotaryCos', rotaryCos],
    ['rotarySin', rotarySin],
  ] as const) {
    if (t.rank !== 2 || (typeof t.dim(1) === 'number' && t.dim(1) !== half))
      throw bad(`${name} must be [num_patches, ${half}] (headDim/2), got ${t}.`);
  }
  if (segmentIds.rank !== 1 || (segmentIds.dtype !== 'int32' && segmentIds.dtype !== 'int64')) {
    throw bad(`segmentIds must be int32 or int64 [num_patches], got ${segmentIds}.`);
  }
}
