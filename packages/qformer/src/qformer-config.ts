import { ConfigError, type ConfigObject, fields } from '@vlmkit/config';

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

/** HF 5.17 Blip2QFormerConfig defaults for absent fields (transformers configuration_blip_2.py). */
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

const HF = 'HF Blip2QFormerConfig';

/**
 * Reads a Q-Former config from JSON: a Blip2QFormerConfig itself
 * (model_type blip_2_qformer) or a parent config holding one under
 * `qformer_config` (BLIP-2, InstructBLIP, Granite 4 Vision). Absent fields
 * take HF 5.17's Blip2QFormerConfig defaults. `use_qformer_text_input` may be
 * true: the text path's parameters exist then but only the query path is built.
 * Throws `ConfigError` (from @vlmkit/config) naming the field: MISSING_CONFIG_FIELD,
 * INVALID_CONFIG, INCONSISTENT_CONFIG, UNSUPPORTED_CONFIG.
 */
export function qformerFromHfConfig(json: unknown): Blip2QFormerConfig {
  const top = fields(json, 'Q-Former config');
  const q = top.optionalObj('qformer_config');
  if (q !== undefined) return parseQFormer(q);
  const type = top.optionalStr('model_type');
  if (type !== undefined && type !== 'blip_2_qformer') {
    top.fail(
      'MISSING_CONFIG_FIELD',
      'qformer_config',
      `is missing and model_type is "${type}": pass a Blip2QFormerConfig (model_type "blip_2_qformer") or a config that holds one.`,
    );
  }
  return parseQFormer(top);
}

/** A Blip2QFormerConfig JSON object -> config, validated; absent fields take HF Blip2QFormerConfig's defaults. */
export function parseQFormer(q: ConfigObject): Blip2QFormerConfig {
  const d = BLIP2_QFORMER_DEFAULTS;
  q.optionalBool('use_qformer_text_input'); // type-checked only: the text path is not built
  const hiddenSize = q.int('hidden_size', { default: d.hiddenSize, from: HF });
  const numAttentionHeads = q.int('num_attention_heads', { default: d.numAttentionHeads, from: HF });
  if (hiddenSize % numAttentionHeads !== 0) {
    // HF Blip2QFormerMultiHeadAttention.__init__ raises the same; named by the config.json fields here.
    const given = (key: string) => (q.has(key) ? '' : ", HF Blip2QFormerConfig's default");
    q.fail(
      'INCONSISTENT_CONFIG',
      'num_attention_heads',
      `(${numAttentionHeads}${given('num_attention_heads')}) must divide hidden_size (${hiddenSize}${given('hidden_size')}).`,
    );
  }
  return validateQFormerConfig({
    hiddenSize,
    numHiddenLayers: q.int('num_hidden_layers', { default: d.numHiddenLayers, from: HF }),
    numAttentionHeads,
    intermediateSize: q.int('intermediate_size', { default: d.intermediateSize, from: HF }),
    hiddenAct: q.oneOf('hidden_act', ACTIVATIONS, { default: d.hiddenAct, from: HF, code: 'UNSUPPORTED_CONFIG' }),
    layerNormEps: q.positive('layer_norm_eps', { default: d.layerNormEps, from: HF }),
    crossAttentionFrequency: q.int('cross_attention_frequency', { default: d.crossAttentionFrequency, from: HF }),
    encoderHiddenSize: q.int('encoder_hidden_size', { default: d.encoderHiddenSize, from: HF }),
  });
}

const WHAT = 'Q-Former config';

/**
 * Checks a config built by hand (or by `qformerFromHfConfig`) and returns it.
 * The builders call it too, so a bad config fails before any node is added.
 * Throws `ConfigError` naming the `Blip2QFormerConfig` key.
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
    if (!Number.isInteger(x) || x < 1) throw new ConfigError('INVALID_CONFIG', key, WHAT, `must be a positive integer, got ${String(x)}.`);
  }
  if (typeof config.layerNormEps !== 'number' || !Number.isFinite(config.layerNormEps) || config.layerNormEps <= 0) {
    throw new ConfigError('INVALID_CONFIG', 'layerNormEps', WHAT, `must be a positive number, got ${String(config.layerNormEps)}.`);
  }
  if (!ACTIVATIONS.includes(config.hiddenAct)) {
    throw new ConfigError(
      'UNSUPPORTED_CONFIG',
      'hiddenAct',
      WHAT,
      `"${String(config.hiddenAct)}" is not one of ${ACTIVATIONS.join(', ')}.`,
    );
  }
  // HF Blip2QFormerMultiHeadAttention.__init__ raises the same.
  if (config.hiddenSize % config.numAttentionHeads !== 0) {
    throw new ConfigError(
      'INCONSISTENT_CONFIG',
      'hiddenSize',
      WHAT,
      `${config.hiddenSize} is not a multiple of numAttentionHeads ${config.numAttentionHeads}.`,
    );
  }
  return config;
}
