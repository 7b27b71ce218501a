import { type ConfigObject, ErnieConfigFields } from '@vlmkit/config';

import { type DecoderGeometry, decoderGeometry } from '../attention-config.js';
import { defaultRope } from '../rope-config.js';
/** Which feed-forward a decoder layer has: a dense SiLU MLP or the modality-isolated MoE. */
export type ErnieMlpType = 'dense' | 'sparse';

/**
 * The ERNIE-4.5-VL text decoder (Ernie4_5_VLMoeForCausalLM), validated and
 * with every default resolved. `fromHfConfig` reads HF transformers 5.17's
 * layout (`text_config`, `rope_parameters.mrope_section`, `mlp_layer_types`)
 * and Baidu's original hub layout (`freq_allocation`,
 * `moe_layer_start_index` / `end_index` / `interval`).
 */
export interface ErnieTextConfig extends DecoderGeometry {
  vocabSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  /** How many of the last headDim/2 rotary frequencies follow the t position (vLLM freq_allocation; HF mrope_section[2]). */
  freqAllocation: number;
  /** Dense MLP intermediate size (layers that are not MoE). */
  intermediateSize: number;
  /** Per layer: 'dense' or 'sparse' (MoE with text and vision experts). */
  mlpLayerTypes: ErnieMlpType[];
  moe: {
    /** Routed experts per modality: [text, vision]. */
    numExperts: [number, number];
    /** Experts chosen per token (moe_k). */
    topK: number;
    /** Expert intermediate size per modality: [text, vision]. */
    intermediateSize: [number, number];
    /** Shared experts, fused into one MLP of intermediateSize[0] * numShared (0: none). */
    numSharedExperts: number;
    /** Lower clamp of the routing-weight sum (HF Ernie4_5_VLMoeMoeTopKRouter). */
    normMin: number;
  };
  /** lm_head shares embed_tokens' weight. */
  tieWordEmbeddings: boolean;
}

/** Where the defaults below come from (transformers 5.17 configuration_ernie4_5_vl_moe.py). */
const HF = 'HF Ernie4_5_VLMoeTextConfig';

/**
 * Reads an HF `config.json` (the whole VL config with `text_config`, or the
 * text config alone, HF 5.17 or Baidu layout) into an `ErnieTextConfig`.
 * Throws `ConfigError` (from @vlmkit/config) naming the field's path:
 * INVALID_CONFIG, MISSING_CONFIG_FIELD, INCONSISTENT_CONFIG or UNSUPPORTED_CONFIG.
 */
export function ernieTextConfigFromHf(json: unknown): ErnieTextConfig {
  return ernieTextConfigFromFields(ErnieConfigFields.of(json, 'ERNIE text config'));
}

/**
 * The text decoder's config from an ERNIE-4.5-VL config.json whose layout is already
 * detected: the fields other components read too (hidden size, eps) through `f`'s readers.
 */
export function ernieTextConfigFromFields(f: ErnieConfigFields): ErnieTextConfig {
  const { top, text: j } = f;
  const hf = f.layout === 'hf';

  // HF Ernie4_5_VLMoeTextAttention: head_dim or hidden_size // num_attention_heads.
  const geometry = decoderGeometry(j, f.textHiddenSize, () => ({ default: 4, from: HF }));
  const { numHiddenLayers } = geometry;
  const half = geometry.headDim / 2;

  j.oneOf('hidden_act', ['silu'], { default: 'silu', from: HF, code: 'UNSUPPORTED_CONFIG', why: 'The decoder builds SiLU-gated MLPs.' });
  if (j.bool('use_bias', { default: false, from: HF })) {
    j.fail('UNSUPPORTED_CONFIG', 'use_bias', 'true is not supported; ERNIE-4.5-VL checkpoints have no projection biases.');
  }

  // Rotary: HF keeps theta and mrope_section [h, w, t] in rope_parameters; Baidu has rope_theta and freq_allocation.
  // HF: Ernie4_5_VLMoeTextConfig.default_theta; vLLM: set_default_rope_theta(config, default_theta=500000).
  const { parameters: rp, theta: ropeTheta } = defaultRope(j, 'ERNIE', { default: 500000, from: `${HF}.default_theta` });
  let freqAllocation: number;
  let freqField: [ConfigObject, string];
  if (rp?.has('mrope_section')) {
    const [h, w, t] = rp.ints('mrope_section', { length: 3, min: 0 }) as [number, number, number];
    if (h !== w || h + w + t !== half) {
      rp.fail('INCONSISTENT_CONFIG', 'mrope_section', `[${h}, ${w}, ${t}] must be [n, n, t] with 2n + t = head_dim / 2 = ${half}.`);
    }
    freqAllocation = t;
    freqField = [rp, 'mrope_section'];
  } else {
    if (rp !== undefined && !j.has('freq_allocation')) {
      // HF layout without the section: HF's text rotary reads rope_parameters["mrope_section"] and has no default.
      rp.fail(
        'MISSING_CONFIG_FIELD',
        'mrope_section',
        `is missing, and so is freq_allocation (Baidu layout); expected [h, w, t] with 2h + t = head_dim / 2 = ${half}.`,
      );
    }
    freqAllocation = j.int('freq_allocation', { min: 0, default: 20, from: 'vLLM Ernie4_5_VLMoeDecoderLayer' });
    freqField = [j, 'freq_allocation'];
  }
  if (freqAllocation > half || (half - freqAllocation) % 2 !== 0) {
    freqField[0].fail(
      'INCONSISTENT_CONFIG',
      freqField[1],
      `gives freq_allocation ${freqAllocation}, which must leave an even number of the head_dim / 2 = ${half} frequencies for h and w.`,
    );
  }

  const numExperts = j.pair('moe_num_experts', { min: 1, default: 64, from: HF });
  const intermediateSize = j.pair('moe_intermediate_size', { default: [1536, 512], from: `${HF}.__post_init__` });
  const topK = j.int('moe_k', { default: 6, from: HF });
  const numSharedExperts = j.int('moe_num_shared_experts', { min: 0, default: 2, from: HF });
  const normMin = j.positive('moe_norm_min', { default: 1e-12, from: HF });
  const mlpLayerTypes = resolveLayerTypes(j, numHiddenLayers);
  if (mlpLayerTypes.includes('sparse')) {
    for (const [m, n] of [
      ['text', numExperts[0]],
      ['vision', numExperts[1]],
    ] as const) {
      if (n < topK) j.fail('INCONSISTENT_CONFIG', 'moe_k', `(${topK}) exceeds the ${n} ${m} experts of moe_num_experts.`);
    }
    if (intermediateSize[0] < 1 || intermediateSize[1] < 1) {
      j.fail('INVALID_CONFIG', 'moe_intermediate_size', `must be positive for MoE layers, found [${intermediateSize.join(', ')}].`);
    }
  }
  // HF ties lm_head by the model's own config: the top-level one of a VL config (getattr(config, "tie_word_embeddings")
  // in PreTrainedModel.get_expanded_tied_weights_keys), whatever text_config says; Ernie4_5_VLMoeConfig defaults it to true.
  if (hf) j.optionalBool('tie_word_embeddings'); // type-checked; the top-level value decides
  const tieWordEmbeddings = top.bool('tie_word_embeddings', {
    default: true,
    from: hf ? 'HF Ernie4_5_VLMoeConfig (the top-level config ties lm_head)' : HF,
  });

  return {
    ...geometry,
    vocabSize: j.int('vocab_size'),
    rmsNormEps: f.textRmsNormEps,
    ropeTheta,
    freqAllocation,
    intermediateSize: j.int('intermediate_size'),
    mlpLayerTypes,
    moe: { numExperts, topK, intermediateSize, numSharedExperts, normMin },
    tieWordEmbeddings,
  };
}

/**
 * HF 5.17: `mlp_layer_types`. Baidu / vLLM: a layer is MoE when
 * (i + 1) % interval == 0 and min(start) <= i <= max(end)
 * (vLLM Ernie4_5_VLMoeDecoderLayer). Inside an MoE layer vLLM swaps a
 * modality whose range does not cover i for a dense MLP; no released
 * checkpoint needs that, so it is refused rather than guessed.
 */
function resolveLayerTypes(j: ConfigObject, layers: number): ErnieMlpType[] {
  if (j.has('mlp_layer_types')) {
    const given = j.strings('mlp_layer_types', { values: ['dense', 'sparse'] });
    if (given.length !== layers) {
      j.fail(
        'INCONSISTENT_CONFIG',
        'mlp_layer_types',
        `has ${given.length} entries; expected one per layer: ${layers} (num_hidden_layers).`,
      );
    }
    return given as ErnieMlpType[];
  }
  // HF Ernie4_5_VLMoeTextConfig.__post_init__: layer 0 dense, the rest sparse.
  if (!j.has('moe_layer_start_index')) return Array.from({ length: layers }, (_, i) => (i === 0 ? 'dense' : 'sparse'));
  const start = j.pair('moe_layer_start_index');
  const end = j.pair('moe_layer_end_index', { default: [layers - 1, layers - 1], from: 'vLLM Ernie4_5_VLMoeMoE' });
  const interval = j.int('moe_layer_interval', { default: 1, from: 'vLLM Ernie4_5_VLMoeDecoderLayer' });
  return Array.from({ length: layers }, (_, i) => {
    const moe = (i + 1) % interval === 0 && i >= Math.min(...start) && i <= Math.max(...end);
    if (!moe) return 'dense';
    const text = i >= start[0] && i <= end[0];
    const vision = i >= start[1] && i <= end[1];
    if (!text || !vision) {
      j.fail(
        'UNSUPPORTED_CONFIG',
        'moe_layer_end_index',
        `[${end.join(', ')}] with moe_layer_start_index [${start.join(', ')}] makes layer ${i} an MoE layer with only ${text ? 'text' : 'vision'} experts; mixed MoE/dense modalities in one layer are not supported.`,
      );
    }
    return 'sparse';
  });
}
