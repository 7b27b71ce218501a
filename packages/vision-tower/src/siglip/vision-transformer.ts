import { applyComputeDtype, type ComputeDType, contract, declareInputs, Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { VisionTowerError } from '../errors.js';
import type { AttentionOp } from '../types.js';
import type { SiglipVisionConfig } from './config.js';
import { siglipVisionEmbeddings } from './embeddings.js';
import { siglipEncoderLayer } from './encoder-layer.js';

export interface SiglipVisionBuildOptions {
  /** Attention kernel (default com.microsoft MultiHeadAttention; no mask is needed). */
  attentionOp?: AttentionOp;
  /** Apply `post_layernorm` to the last hidden state (default false, as vLLM's Granite 4 Vision: require_post_norm=False). */
  postLayerNorm?: boolean;
  /** Scope of the tower's nodes and initializers (default `vision_tower`). */
  scope?: string;
}

/** `buildSiglipVisionTowerModel`'s options: the builder's, and the graph's compute dtype. */
export interface SiglipVisionTowerModelOptions extends SiglipVisionBuildOptions {
  /**
   * The float type the tower computes in (default 'float32': built in it, then converted by onnx-graph's
   * `floatConvertPass`); `pixel_values` and the outputs stay float32.
   */
  computeDtype?: ComputeDType | undefined;
}

export interface SiglipVisionTowerOutputs {
  /** L + 1 values [B, Np, D]: the embeddings, then the output of each encoder layer (HF hidden_states, vLLM return_all_hidden_states). */
  hiddenStates: Value[];
  /** The last hidden state after post_layernorm, when `postLayerNorm`. */
  pooled: Value | undefined;
}

/**
 * vLLM: SiglipVisionTransformer (embeddings -> encoder returning all hidden
 * states). Adds the tower to `g` under `options.scope`; `pixelValues` is
 * [B, C, imageSize, imageSize] (one row per anyres tile). Written in float32;
 * in a 16-bit graph (`floatConvertPass`) the hidden states are 16-bit and the
 * LayerNorms run in float32 inside.
 */
export function buildSiglipVisionTower(
  g: Graph,
  weights: Weights,
  config: SiglipVisionConfig,
  inputs: { pixelValues: Value },
  options: SiglipVisionBuildOptions = {},
): SiglipVisionTowerOutputs {
  const pv = inputs.pixelValues;
  const { numChannels: c, imageSize: s } = config;
  const fits = pv.rank === 4 && [c, s, s].every((d, i) => typeof pv.dim(i + 1) !== 'number' || pv.dim(i + 1) === d);
  if (!fits || (pv.dtype !== 'float32' && pv.dtype !== 'float16')) {
    throw new VisionTowerError('BAD_INPUT', `SigLIP tower: pixelValues must be float32/float16 [batch, ${c}, ${s}, ${s}], got ${pv}.`);
  }
  const op = options.attentionOp ?? 'MultiHeadAttention';
  return g.scope(options.scope ?? 'vision_tower', () => {
    const x = g.scope('embeddings', () => siglipVisionEmbeddings(g, weights.sub('embeddings'), config, g.cast(pv, 'float32')));
    const hiddenStates = [x];
    let h = x;
    for (let l = 0; l < config.numHiddenLayers; l++) {
      const name = `encoder.layers.${l}`;
      h = g.scope(name, () => siglipEncoderLayer(g, weights.sub(name), config, h, op));
      hiddenStates.push(h);
    }
    const pooled = options.postLayerNorm ? nn.layerNorm(g, h, weights, 'post_layernorm', config.layerNormEps) : undefined;
    return { hiddenStates, pooled };
  });
}

/** The standalone SigLIP tower's input; `channels` and `image_size` are bound from the config. */
export const SIGLIP_VISION_TOWER_INPUTS = contract({ pixel_values: ['float32', ['batch', 'channels', 'image_size', 'image_size']] });

/** Input and output names of `buildSiglipVisionTowerModel`'s graph. */
export const SIGLIP_VISION_TOWER_IO = {
  pixelValues: SIGLIP_VISION_TOWER_INPUTS.names.pixel_values,
  hiddenStates: 'vision_hidden_states',
  postLayerNorm: 'vision_post_layernorm',
} as const;

/**
 * The SigLIP tower alone. Input `pixel_values` [B, C, S, S] float32; output
 * `vision_hidden_states` [L+1, B, Np, D] (embeddings, then each layer), and
 * `vision_post_layernorm` [B, Np, D] when `postLayerNorm`; outputs float32, computed in `options.computeDtype`.
 */
export function buildSiglipVisionTowerModel(
  weights: Weights,
  config: SiglipVisionConfig,
  options: SiglipVisionTowerModelOptions = {},
): Graph {
  const g = new Graph({ name: 'siglip_vision_tower' });
  const s = config.imageSize;
  const io = SIGLIP_VISION_TOWER_IO;
  const { pixel_values: pixelValues } = declareInputs(g, SIGLIP_VISION_TOWER_INPUTS, {
    sizes: { channels: config.numChannels, image_size: s },
  });
  const { hiddenStates, pooled } = buildSiglipVisionTower(g, weights, config, { pixelValues }, options);
  g.output(
    g.cast(
      g.concat(
        hiddenStates.map((h) => g.unsqueeze(h, [0])),
        0,
      ),
      'float32',
    ),
    io.hiddenStates,
  );
  if (pooled) g.output(g.cast(pooled, 'float32'), io.postLayerNorm);
  applyComputeDtype(g, options.computeDtype);
  return g;
}
