import { QFormerError } from './errors.js';
import { bool, describe, int, isObject, type Json, positive, str } from './json.js';

/** Activations a Q-Former feed-forward may use (HF ACT2FN names). */
export type QFormerActivation = 'gelu' | 'gelu_new' | 'gelu_pytorch_tanh' | 'quick_gelu' | 'relu' | 'silu';

const ACTIVATIONS: readonly QFormerActivation[] = ['gelu', 'gelu_new', 'gelu_pytorch_tanh', 'quick_gelu', 'relu', 'silu'];

/**
 * What the BLIP-2 Q-Former encoder needs to know (HF Blip2QFormerConfig, the
 * fields that change the numbers). H = hiddenSize, E = encoderHiddenSize.
 */
export interface Blip2QFormerConfig {
  /** H: width of the query tokens (hidden_size). */
  readonly hiddenSize: number;
  /** Layers of self-attention (+ cross-attention) + feed-forward (num_hidden_layers). */
  readonly numHiddenLayers: number;
  /** Heads of every attention; H must be a multiple (num_attention_heads). */
  readonly numAttentionHeads: number;
  /** Width of the query feed-forward, intermediate_query (intermediate_size). */
  readonly intermediateSize: number;
  /** Feed-forward activation (hidden_act; HF "gelu" is the exact erf GELU). */
  readonly hiddenAct: QFormerActivation;
  /** eps of every LayerNorm in the Q-Former (layer_norm_eps, 1e-12 by default). */
  readonly layerNormEps: number;
  /** Layer i has cross-attention when i % crossAttentionFrequency == 0 (cross_attention_frequency). */
  readonly crossAttentionFrequency: number;
  /** E: width of the encoder hidden states the cross-attention reads (encoder_hidden_size). */
  readonly encoderHiddenSize: number;
}

/** HF 5.17 Blip2QFormerConfig defaults for absent fields. */
export const BLIP2_QFORMER_DEFAULTS: Blip2QFormerConfig = {
  hiddenSize: 768,
  numHiddenLayers: 12,
  numAttentionHeads: 12,
  intermediateSize: 3072,
  hiddenAct: 'gelu',
  layerNormEps: 1e-12,
  crossAttentionFrequency: 2,
  encoderHiddenSize: 1408,
};

/**
 * Reads a Q-Former config from JSON: a Blip2QFormerConfig itself
 * (model_type blip_2_qformer) or a parent config holding one under
 * `qformer_config` (BLIP-2, InstructBLIP, Granite 4 Vision). Absent fields
 * take HF 5.17's Blip2QFormerConfig defaults. `use_qformer_text_input` may be
 * true: the text path's parameters exist then but only the query path is built.
 * Throws `QFormerError` (MISSING_CONFIG_FIELD, INVALID_CONFIG, UNSUPPORTED_CONFIG).
 */
export function qformerFromHfConfig(json: unknown): Blip2QFormerConfig {
  if (!isObject(json)) throw new QFormerError('MISSING_CONFIG_FIELD', `config.json must be a JSON object, got ${describe(json)}`);
  if (json['qformer_config'] !== undefined && json['qformer_config'] !== null) {
    const q = json['qformer_config'];
    if (!isObject(q)) throw new QFormerError('INVALID_CONFIG', `config.json: qformer_config must be an object, got ${describe(q)}`);
    return parseQFormer(q, 'qformer_config.');
  }
  const type = json['model_type'];
  if (type !== undefined && type !== 'blip_2_qformer') {
    throw new QFormerError(
      'MISSING_CONFIG_FIELD',
      `config.json has model_type ${describe(type)} and no qformer_config: pass a Blip2QFormerConfig (model_type "blip_2_qformer") or a config that holds one`,
    );
  }
  return parseQFormer(json, '');
}

/** A Blip2QFormerConfig JSON object (at `path` inside config.json) -> config, validated. */
export function parseQFormer(q: Json, path: string, defaults: Blip2QFormerConfig = BLIP2_QFORMER_DEFAULTS): Blip2QFormerConfig {
  const act = str(q, 'hidden_act', path, defaults.hiddenAct);
  if (!(ACTIVATIONS as readonly string[]).includes(act)) {
    throw new QFormerError(
      'UNSUPPORTED_CONFIG',
      `config.json: ${path}hidden_act "${act}" is not supported; use one of ${ACTIVATIONS.join(', ')}`,
    );
  }
  bool(q, 'use_qformer_text_input', path, false); // type-checked only: the text path is not built
  return validateQFormerConfig({
    hiddenSize: int(q, 'hidden_size', path, defaults.hiddenSize),
    numHiddenLayers: int(q, 'num_hidden_layers', path, defaults.numHiddenLayers),
    numAttentionHeads: int(q, 'num_attention_heads', path, defaults.numAttentionHeads),
    intermediateSize: int(q, 'intermediate_size', path, defaults.intermediateSize),
    hiddenAct: act as QFormerActivation,
    layerNormEps: positive(q, 'layer_norm_eps', path, defaults.layerNormEps),
    crossAttentionFrequency: int(q, 'cross_attention_frequency', path, defaults.crossAttentionFrequency),
    encoderHiddenSize: int(q, 'encoder_hidden_size', path, defaults.encoderHiddenSize),
  });
}

/**
 * Checks a config built by hand (or by `qformerFromHfConfig`) and returns it.
 * The builders call it too, so a bad config fails before any node is added.
 */
export function validateQFormerConfig(config: Blip2QFormerConfig): Blip2QFormerConfig {
  for (const key of [
    'hiddenSize',
    'numHiddenLayers',
    'numAttentionHeads',
    'intermediateSize',
    'crossAttentionFrequency',
    'encoderHiddenSize',
  ] as const) {
    const x = config[key];
    if (!Number.isInteger(x) || x < 1)
      throw new QFormerError('INVALID_CONFIG', `Q-Former config: ${key} must be a positive integer, got ${String(x)}`);
  }
  if (typeof config.layerNormEps !== 'number' || !Number.isFinite(config.layerNormEps) || config.layerNormEps <= 0) {
    throw new QFormerError('INVALID_CONFIG', `Q-Former config: layerNormEps must be a positive number, got ${String(config.layerNormEps)}`);
  }
  if (!ACTIVATIONS.includes(config.hiddenAct)) {
    throw new QFormerError(
      'UNSUPPORTED_CONFIG',
      `Q-Former config: hiddenAct "${String(config.hiddenAct)}" is not one of ${ACTIVATIONS.join(', ')}`,
    );
  }
  // HF Blip2QFormerMultiHeadAttention.__init__ raises the same.
  if (config.hiddenSize % config.numAttentionHeads !== 0) {
    throw new QFormerError(
      'INVALID_CONFIG',
      `Q-Former config: hiddenSize ${config.hiddenSize} is not a multiple of numAttentionHeads ${config.numAttentionHeads}`,
    );
  }
  return config;
}
