import { GraniteConfigFields } from '@vlmkit/config';

import { type DecoderGeometry, decoderGeometry } from '../attention-config.js';
import { defaultRope } from '../rope-config.js';
/**
 * The dense Granite text decoder of Granite 4 Vision (HF 5.17
 * `Granite4VisionTextModel` + `lm_head`; vLLM `GraniteModel` /
 * `Granite4VisionLLMModel`), validated, every default resolved.
 */
export interface GraniteTextConfig extends DecoderGeometry {
  /** MLP intermediate size (granitemoehybrid: shared_intermediate_size, the size of its `shared_mlp`). */
  intermediateSize: number;
  vocabSize: number;
  rmsNormEps: number;
  /** Standard 1D RoPE over the whole head (neox halves). */
  ropeTheta: number;
  /** Input embeddings are multiplied by this. */
  embeddingMultiplier: number;
  /** The attention softmax scale itself (not 1/sqrt(headDim)). */
  attentionMultiplier: number;
  /** Each branch (attention, MLP) is multiplied by this before its residual add. */
  residualMultiplier: number;
  /** Logits are divided by this. */
  logitsScaling: number;
  /** lm_head shares embed_tokens' weight. */
  tieWordEmbeddings: boolean;
  /** q/k/v/o projections have biases. */
  attentionBias: boolean;
  /** gate_up/down projections have biases. */
  mlpBias: boolean;
}

/** Where the defaults below come from (transformers 5.17 configuration_granite4_vision.py). */
const HF = 'HF Granite4VisionTextConfig';

const TEXT_MODEL_TYPES = ['granite4_vision_text', 'granitemoehybrid', 'granite'] as const;

/**
 * Reads a Granite 4 Vision `config.json` (its `text_config`) or a text config
 * alone: HF 5.17's `granite4_vision_text`, the hub's `granitemoehybrid`
 * (every layer attention, no routed experts) or plain `granite`. Defaults
 * are HF's. Throws `ConfigError` (from @vlmkit/config) naming the field's
 * path: INVALID_CONFIG, MISSING_CONFIG_FIELD, INCONSISTENT_CONFIG or UNSUPPORTED_CONFIG.
 *
 * RoPE is always on: HF's Granite4VisionTextModel and vLLM's GraniteModel
 * apply it whatever granitemoehybrid's `position_embedding_type` says.
 */
export function graniteTextConfigFromHf(json: unknown): GraniteTextConfig {
  return graniteTextConfigFromFields(GraniteConfigFields.of(json, 'Granite text config'));
}

/** The decoder's config from a Granite 4 Vision config.json read once: its width through `f`'s reader, shared with the projector. */
export function graniteTextConfigFromFields(f: GraniteConfigFields): GraniteTextConfig {
  const { top, text: j } = f;

  const type = j.oneOf('model_type', TEXT_MODEL_TYPES, {
    default: 'granite4_vision_text',
    from: 'HF Granite4VisionConfig.__post_init__',
    code: 'UNSUPPORTED_CONFIG',
    why: 'Only dense Granite decoders are built.',
  });
  const layerTypesKey = j.has('layer_types') || !j.has('layers_block_type') ? 'layer_types' : 'layers_block_type';
  const layerTypes = j.has(layerTypesKey) ? j.strings(layerTypesKey) : undefined;
  const bad = layerTypes?.findIndex((t) => t !== 'attention' && t !== 'full_attention') ?? -1;
  if (bad >= 0) {
    j.fail(
      'UNSUPPORTED_CONFIG',
      `${layerTypesKey}[${bad}]`,
      `is ${JSON.stringify(layerTypes![bad])}; expected 'attention': only all-attention Granite decoders are built (no mamba layers).`,
    );
  }
  const experts = j.optionalInt('num_local_experts', { min: 0 }) ?? 0;
  if (experts > 0 && type === 'granitemoehybrid') {
    j.fail('UNSUPPORTED_CONFIG', 'num_local_experts', `is ${experts}; only dense Granite decoders are built (no routed experts).`);
  }
  j.oneOf('hidden_act', ['silu'], { default: 'silu', from: HF, code: 'UNSUPPORTED_CONFIG', why: 'The decoder builds SiLU-gated MLPs.' });

  // HF GraniteAttention: head_dim or hidden_size // num_attention_heads.
  const geometry = decoderGeometry(j, f.textHiddenSize, (heads) => ({ default: heads, from: `${HF}.__post_init__ (num_attention_heads)` }));
  const { numHiddenLayers } = geometry;
  if (layerTypes !== undefined && layerTypes.length !== numHiddenLayers) {
    j.fail(
      'INCONSISTENT_CONFIG',
      layerTypesKey,
      `has ${layerTypes.length} entries; expected one per layer: ${numHiddenLayers} (num_hidden_layers).`,
    );
  }

  // HF 5.17 keeps theta in rope_parameters; older hub files have rope_theta and rope_scaling at the top.
  // Granite4VisionTextConfig sets no default_theta: PreTrainedConfig's standardize_rope_params falls back to 10000.
  const { theta: ropeTheta } = defaultRope(j, 'Granite 4 Vision', { default: 10000, from: 'HF PreTrainedConfig rope default' });

  // granitemoehybrid: shared_intermediate_size is the size of its (only) shared_mlp.
  const intermediateSize = j.has('shared_intermediate_size') ? j.int('shared_intermediate_size') : j.int('intermediate_size');
  const textTie = j.bool('tie_word_embeddings', { default: false, from: HF });
  return {
    ...geometry,
    intermediateSize,
    vocabSize: j.int('vocab_size'),
    rmsNormEps: j.positive('rms_norm_eps', { default: 1e-6, from: HF }),
    ropeTheta,
    embeddingMultiplier: j.positive('embedding_multiplier', { default: 1, from: HF }),
    attentionMultiplier: j.positive('attention_multiplier', { default: 1, from: HF }),
    residualMultiplier: j.positive('residual_multiplier', { default: 1, from: HF }),
    logitsScaling: j.positive('logits_scaling', { default: 1, from: HF }),
    // HF ties lm_head by the model's own config: the top-level one of a VL config, whatever text_config says
    // (getattr(config, "tie_word_embeddings") in PreTrainedModel.get_expanded_tied_weights_keys); Granite4VisionConfig
    // defaults it to false.
    tieWordEmbeddings:
      top === j
        ? textTie
        : top.bool('tie_word_embeddings', { default: false, from: 'HF Granite4VisionConfig (the top-level config ties lm_head)' }),
    attentionBias: j.bool('attention_bias', { default: false, from: HF }),
    mlpBias: j.bool('mlp_bias', { default: false, from: HF }),
  };
}
