import { Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { VisionTowerError } from '../errors.js';
import type { AttentionOp } from '../types.js';
import { blockDiagonalMask } from './attention-mask.js';
import { type ErnieVisionConfig, ernieVisionHeadDim } from './config.js';
import { visionBlock } from './vision-block.js';

/** The tower's graph inputs, as values of the caller's graph. */
export interface ErnieVisionTowerInputs {
  /** [Np, C*p*p] flattened patches (float32, or float16 to compute in half precision). */
  pixelValues: Value;
  /** [Np, headDim/2] per-patch tables from `ernieVisionInputs`. */
  rotaryCos: Value;
  rotarySin: Value;
  /** [Np] int32/int64 frame ids from `ernieVisionInputs`. */
  segmentIds: Value;
}

export interface ErnieVisionTowerOutputs {
  /** [Np, Dv], after the final LayerNorm `ln`. */
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

export const DEFAULT_ATTENTION_OP: AttentionOp = 'MultiHeadAttention';

/** vLLM: Ernie4_5_VisionPatchEmbed. A bias-free linear on flattened patches. */
export function patchEmbed(g: Graph, w: Weights, config: ErnieVisionConfig, pixelValues: Value): Value {
  const { hiddenSize: d, inChannels: c, patchSize: p } = config;
  return nn.linear(g, pixelValues, w, 'proj', { bias: false, in: c * p * p, out: d });
}

/**
 * vLLM: Ernie4_5_VisionTransformer.forward. Adds the tower to `g` inside
 * `options.scope`: patch_embed -> blocks (2D rotary, attention per frame) -> ln.
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
    let x = g.scope('patch_embed', () => patchEmbed(g, weights.sub('patch_embed'), config, inputs.pixelValues));
    const like = (t: Value) => g.unsqueeze(t.dtype === x.dtype ? t : g.cast(t, x.dtype), [0]);
    const rotary = g.scope('rotary', () => ({ cos: like(inputs.rotaryCos), sin: like(inputs.rotarySin) }));
    const frames = blockDiagonalMask(g, inputs.segmentIds, op, x.dtype);
    for (let i = 0; i < config.depth; i++) {
      const name = `blocks.${i}`;
      x = g.scope(name, () => visionBlock(g, weights.sub(name), config, x, rotary, frames));
    }
    return { hidden: nn.layerNorm(g, x, weights, 'ln', config.finalNormEps) };
  });
}

/** Input and output names of `buildErnieVisionTowerModel`'s graph. */
export const ERNIE_VISION_TOWER_IO = {
  pixelValues: 'pixel_values',
  rotaryCos: 'rotary_cos',
  rotarySin: 'rotary_sin',
  segmentIds: 'segment_ids',
  visionHidden: 'vision_hidden',
} as const;

/** The tower's feeds by input name, as tensors of the caller's type (this package does not import onnxruntime). */
export type ErnieVisionTowerFeeds<T> = Record<(typeof ERNIE_VISION_TOWER_IO)['pixelValues' | 'rotaryCos' | 'rotarySin' | 'segmentIds'], T>;

/** Names the tower's feeds: `pixelValues` [Np, C*p*p], rotary tables and segment ids from `ernieVisionInputs`. */
export function ernieVisionTowerFeeds<T>(x: { pixelValues: T; rotaryCos: T; rotarySin: T; segmentIds: T }): ErnieVisionTowerFeeds<T> {
  const io = ERNIE_VISION_TOWER_IO;
  return { [io.pixelValues]: x.pixelValues, [io.rotaryCos]: x.rotaryCos, [io.rotarySin]: x.rotarySin, [io.segmentIds]: x.segmentIds };
}

/**
 * The tower alone as a complete model. Inputs: `pixel_values` [Np, C*p*p]
 * float32, `rotary_cos` / `rotary_sin` [Np, headDim/2] float32, `segment_ids`
 * [Np] int32 (all from `ernieVisionInputs`). Output: `vision_hidden` [Np, Dv] float32.
 */
export function buildErnieVisionTowerModel(weights: Weights, config: ErnieVisionConfig, options: ErnieVisionBuildOptions = {}): Graph {
  const g = new Graph({ name: 'ernie_vision_tower' });
  const half = ernieVisionHeadDim(config) / 2;
  const io = ERNIE_VISION_TOWER_IO;
  const inputs: ErnieVisionTowerInputs = {
    pixelValues: g.input(io.pixelValues, 'float32', ['num_patches', config.inChannels * config.patchSize ** 2]),
    rotaryCos: g.input(io.rotaryCos, 'float32', ['num_patches', half]),
    rotarySin: g.input(io.rotarySin, 'float32', ['num_patches', half]),
    segmentIds: g.input(io.segmentIds, 'int32', ['num_patches']),
  };
  const { hidden } = buildErnieVisionTower(g, weights, config, inputs, options);
  g.output(hidden, io.visionHidden);
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
