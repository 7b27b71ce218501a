import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { causalPaddingMask } from '../attention-mask.js';
import { embedTokens } from '../embedding.js';
import { MoeDecoderError } from '../errors.js';
import { lmHead } from '../lm-head.js';
import { keepLastPositions } from '../logits-to-keep.js';
import type { KvCacheMode, KvPair } from '../types.js';
import type { GraniteTextConfig } from './config.js';
import { addDeepstackFeatures, zeroRows } from './deepstack.js';
import { graniteDecoderLayer } from './layer.js';
import { checkGraniteLevels } from './levels.js';
import { graniteRotaryTables } from './rotary.js';

export interface GraniteTextDecoderInputs {
  /** [B, S] int64 token ids. Give these or `inputsEmbeds`. */
  inputIds?: Value;
  /** [B, S, D] float32 token embeddings (before embedding_multiplier), instead of `inputIds`. */
  inputsEmbeds?: Value;
  /** [N] int64 flattened b * S + s rows of the image tokens, in packing order (N may be 0). */
  imagePositions?: Value;
  /** One [N, D] float32 per deepstack level, in `levels` order: the packed image features of that level. */
  deepstack?: readonly Value[];
  /** [B, P + S] int64: 1 = real token, 0 = padding (left padding), over past and current positions. */
  attentionMask: Value;
  /** [B, S] int64 1D positions (HF generate: cumsum(attention_mask) - 1, 0 on padding). */
  positionIds: Value;
  /** One KV pair per layer, [B, Hkv, P, headDim] (P may be 0). Without it no present values are returned. */
  past?: readonly KvPair[];
  /** int64 scalar: logits for the last n positions only, 0 for all (HF `logits_to_keep`). Without it, all positions. */
  logitsToKeep?: Value;
}

export interface GraniteTextDecoderOptions {
  /** Level k -> the LLM layer its features are added before (`graniteDeepstackLevels(config.json)`). */
  levels: readonly number[];
  /** Scope of the decoder's nodes and initializers (default 'decoder'). */
  scope?: string;
  /** How `past` and `present` work (`KvCacheMode`); default 'concat'. */
  kvCache?: KvCacheMode;
}

export interface GraniteTextDecoderOutputs {
  /** [B, S, V] float32 ([B, n, V] with `logitsToKeep` n > 0), already divided by logits_scaling. */
  logits: Value;
  /** [B, S, D] after the final norm. */
  lastHiddenState: Value;
  /** [B, S, D] token embeddings with the image rows zeroed, before embedding_multiplier (HF's `inputs_embeds`). */
  inputsEmbeds: Value;
  /** The input of each decoder layer, after that layer's deepstack features were added, [B, S, D]. */
  layerInputs: Value[];
  /** The output of each decoder layer, [B, S, D] (HF's per-layer hooks). */
  layerOutputs: Value[];
  /** Per layer, [B, Hkv, P + S, headDim] ('append': [B, Hkv, S, headDim]); present when `past` was given. */
  present: KvPair[] | undefined;
}

/**
 * HF: Granite4VisionTextModel + lm_head / logits_scaling; vLLM:
 * Granite4VisionLLMModel (GraniteModel with deepstack injection). Adds the
 * decoder to `g` inside a scope: embeddings with the image rows zeroed,
 * times embedding_multiplier; before layer L, the level mapped to L is added
 * at the image rows (unscaled); dense Granite layers with a KV cache; final
 * norm; lm_head (tied: embed_tokens' weight, stored once) divided by
 * logits_scaling. Written in float32 (parameters in another dtype are cast in
 * the graph, once at save with `fold`); `floatConvertPass` makes the 16-bit
 * graph, in which norms run in float32 inside (as HF) and `logits` stay float32.
 */
export function buildGraniteTextDecoder(
  g: Graph,
  weights: Weights,
  config: GraniteTextConfig,
  inputs: GraniteTextDecoderInputs,
  options: GraniteTextDecoderOptions,
): GraniteTextDecoderOutputs {
  const { numHiddenLayers: L, hiddenSize: D } = config;
  const bad = (m: string): never => {
    throw new MoeDecoderError('BAD_INPUT', `buildGraniteTextDecoder: ${m}`);
  };
  if ((inputs.inputIds === undefined) === (inputs.inputsEmbeds === undefined)) bad('pass exactly one of inputIds and inputsEmbeds.');
  checkGraniteLevels(options.levels, L);
  const deepstack = inputs.deepstack ?? [];
  if (deepstack.length > 0 && deepstack.length !== options.levels.length) {
    bad(`deepstack has ${deepstack.length} feature inputs for ${options.levels.length} levels.`);
  }
  if (deepstack.length > 0 && inputs.imagePositions === undefined) bad('deepstack features need imagePositions.');
  if (inputs.past !== undefined && inputs.past.length !== L) bad(`past has ${inputs.past.length} layers, the config has ${L}.`);

  return g.scope(options.scope ?? 'decoder', () => {
    const positions = inputs.imagePositions;
    // HF Granite4VisionModel.forward: inputs_embeds.masked_fill(vision_mask, 0) (vLLM: text_embeds[is_multimodal] = 0).
    const zeros = positions && zeroRows(g, positions, D);
    const inputsEmbeds =
      inputs.inputIds !== undefined
        ? embedTokens(g, weights, inputs.inputIds, config, zeros && { embeds: zeros, positions: positions! })
        : zeros
          ? g.scope('embed_tokens', () =>
              g.reshape(
                g.scatterND(g.reshape(inputs.inputsEmbeds!, [-1, D]), g.unsqueeze(positions!, [1]), zeros),
                g.shapeOf(inputs.inputsEmbeds!),
                inputs.inputsEmbeds!.shape,
              ),
            )
          : inputs.inputsEmbeds!;
    const x0 = g.scope('embedding_multiplier', () => g.mul(inputsEmbeds, config.embeddingMultiplier));
    const mask = causalPaddingMask(g, inputs.attentionMask, x0);
    const { cos, sin } = graniteRotaryTables(g, inputs.positionIds, config);
    const levelAt = new Map(options.levels.map((layer, k) => [layer, k]));

    const layerInputs: Value[] = [];
    const layerOutputs: Value[] = [];
    const present: KvPair[] = [];
    let x = x0;
    for (let i = 0; i < L; i++) {
      const k = levelAt.get(i);
      if (k !== undefined && deepstack.length > 0) {
        x = g.scope(`deepstack.${k}`, () => addDeepstackFeatures(g, x, { positions: positions!, features: deepstack[k]! }, D));
      }
      const past = inputs.past?.[i];
      layerInputs.push(x);
      const r = g.scope(`layers.${i}`, () =>
        graniteDecoderLayer(g, weights.sub(`layers.${i}`), config, {
          hidden: x,
          cos,
          sin,
          mask,
          ...(past !== undefined ? { past } : {}),
          ...(options.kvCache ? { kvCache: options.kvCache } : {}),
        }),
      );
      x = r.hidden;
      layerOutputs.push(x);
      if (r.present !== undefined) present.push(r.present);
    }
    const lastHiddenState = nn.rmsNorm(g, x, weights, 'norm', config.rmsNormEps);
    // HF divides after the matmul (logits / logits_scaling), so do we (not Gemm alpha = 1/scaling).
    const kept = inputs.logitsToKeep ? keepLastPositions(g, lastHiddenState, inputs.logitsToKeep) : lastHiddenState;
    // HF: lm_head and the division in the compute dtype; a graph's float32 output stays float32 (host sampling).
    const logits = g.div(lmHead(g, weights, config, kept), config.logitsScaling);
    return { logits, lastHiddenState, inputsEmbeds, layerInputs, layerOutputs, present: inputs.past !== undefined ? present : undefined };
  });
}
