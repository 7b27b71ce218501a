import { type ConfigObject, fields } from '@vlmkit/config';
import { type DecoderGeometry, decoderGeometry } from '../attention-config.js';
import { defaultRope } from '../rope-config.js';

/** Which feed-forward a Qwen3-VL-MoE decoder layer has: a dense SiLU MLP or the routed experts. */
export type Qwen3VlMlpType = 'dense' | 'sparse';

/**
 * The Qwen3-VL text decoder (HF 5.17 `Qwen3VLTextModel` / `Qwen3VLMoeTextModel` + `lm_head`; vLLM
 * `Qwen3LLMModel` / `Qwen3MoeLLMModel`), validated, every default resolved.
 */
export interface Qwen3VlTextConfig extends DecoderGeometry {
  vocabSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  /** rope `mrope_section` [t, h, w] (sums to headDim / 2), interleaved as Qwen3-VL does. */
  mropeSection: readonly [number, number, number];
  /** q/k/v/o projections have biases (`attention_bias`). */
  attentionBias: boolean;
  /** Dense MLP intermediate size (every layer of qwen3_vl, `mlp_only_layers` of qwen3_vl_moe). */
  intermediateSize: number;
  /** Per layer: 'dense' or 'sparse' (all 'dense' for qwen3_vl). */
  mlpLayerTypes: Qwen3VlMlpType[];
  /** Routed experts (qwen3_vl_moe); undefined for the dense model. */
  moe: { numExperts: number; topK: number; intermediateSize: number } | undefined;
  /** lm_head shares embed_tokens' weight: the top-level `tie_word_embeddings` only. */
  tieWordEmbeddings: boolean;
}

const MODEL_TYPES = ['qwen3_vl', 'qwen3_vl_moe'] as const;
/** Where the defaults come from (transformers 5.17 configuration_qwen3_vl{,_moe}.py). */
const HF = { qwen3_vl: 'HF Qwen3VLTextConfig', qwen3_vl_moe: 'HF Qwen3VLMoeTextConfig' } as const;
const TOP = { qwen3_vl: 'HF Qwen3VLConfig', qwen3_vl_moe: 'HF Qwen3VLMoeConfig' } as const;

/** Reads a Qwen3-VL or Qwen3-VL-MoE config.json (the whole VL config with `text_config`). */
export function qwen3VlTextConfigFromHf(json: unknown): Qwen3VlTextConfig {
  const top = fields(json, 'Qwen3-VL config');
  const type = top.oneOf('model_type', MODEL_TYPES, { code: 'UNSUPPORTED_CONFIG' });
  return qwen3VlTextConfigFromFields(top, type);
}

/** The decoder's config from a Qwen3-VL config.json whose model type is known (`top` the whole file). */
export function qwen3VlTextConfigFromFields(top: ConfigObject, type: (typeof MODEL_TYPES)[number]): Qwen3VlTextConfig {
  const j = top.optionalObj('text_config') ?? fields({}, top.config, 'text_config');
  const moeModel = type === 'qwen3_vl_moe';
  const hf = HF[type];
  j.oneOf('hidden_act', ['silu'], { default: 'silu', from: hf, code: 'UNSUPPORTED_CONFIG', why: 'The decoder builds SiLU-gated MLPs.' });
  // The dense text config defaults head_dim to 128; the MoE one derives hidden_size // num_attention_heads.
  if (!moeModel) j.int('head_dim', { default: 128, from: hf });
  const hiddenSize = j.int('hidden_size', { default: moeModel ? 2048 : 4096, from: hf });
  const geometry = decoderGeometry(j, hiddenSize, (heads) => ({ default: heads, from: `${hf}.__post_init__ (num_attention_heads)` }));
  const headDim = j.has('head_dim') || moeModel ? geometry.headDim : 128;
  const half = headDim / 2;

  // HF 5.17 keeps theta and mrope_section in rope_parameters; published configs have rope_scaling + rope_theta.
  const { parameters: rp, theta: ropeTheta } = defaultRope(j, 'Qwen3-VL', { default: 500000, from: `${hf}.default_theta` });
  const section = (rp ?? j).ints('mrope_section', { length: 3, min: 0, default: [24, 20, 20], from: 'HF Qwen3VLTextRotaryEmbedding' });
  if (section[0]! + section[1]! + section[2]! !== half) {
    (rp ?? j).fail('INCONSISTENT_CONFIG', 'mrope_section', `[${section.join(', ')}] must add up to head_dim / 2 = ${half}.`);
  }
  const intermediateSize = j.int('intermediate_size', { default: moeModel ? 5632 : 22016, from: hf });
  const { moe, mlpLayerTypes } = moeModel
    ? readExperts(j, geometry.numHiddenLayers, hf)
    : { moe: undefined, mlpLayerTypes: Array<Qwen3VlMlpType>(geometry.numHiddenLayers).fill('dense') };
  return {
    ...geometry,
    headDim,
    vocabSize: j.int('vocab_size', { default: 151936, from: hf }),
    rmsNormEps: j.positive('rms_norm_eps', { default: 1e-6, from: hf }),
    ropeTheta,
    mropeSection: section as [number, number, number],
    attentionBias: j.bool('attention_bias', { default: false, from: hf }),
    intermediateSize,
    mlpLayerTypes,
    moe,
    // HF ties lm_head by the model's own (top-level) config, whatever text_config says.
    tieWordEmbeddings: top.bool('tie_word_embeddings', { default: false, from: TOP[type] }),
  };
}

/**
 * The routed experts of qwen3_vl_moe. HF 5.17 saves `num_local_experts` (its attribute_map of num_experts);
 * published configs have `num_experts`. A layer is sparse unless listed in `mlp_only_layers` or off the
 * `decoder_sparse_step` (HF Qwen3VLMoeTextDecoderLayer). HF's router always renormalizes the top-k weights.
 */
function readExperts(j: ConfigObject, layers: number, hf: string) {
  const key = j.has('num_local_experts') || !j.has('num_experts') ? 'num_local_experts' : 'num_experts';
  const numExperts = j.int(key, { min: 0, default: 60, from: hf });
  const topK = j.int('num_experts_per_tok', { min: 1, default: 4, from: hf });
  if (numExperts > 0 && topK > numExperts) {
    j.fail('INCONSISTENT_CONFIG', 'num_experts_per_tok', `(${topK}) must not exceed ${key} (${numExperts}).`);
  }
  if (!j.bool('norm_topk_prob', { default: true, from: 'HF Qwen3VLMoeTextTopKRouter (always renormalizes)' })) {
    j.fail('UNSUPPORTED_CONFIG', 'norm_topk_prob', 'false is not supported: HF 5.17 renormalizes the top-k routing weights always.');
  }
  const step = j.int('decoder_sparse_step', { min: 1, default: 1, from: hf });
  const dense = new Set(j.has('mlp_only_layers') ? j.ints('mlp_only_layers', { min: 0 }) : []);
  const mlpLayerTypes = Array.from(
    { length: layers },
    (_, i): Qwen3VlMlpType => (!dense.has(i) && numExperts > 0 && (i + 1) % step === 0 ? 'sparse' : 'dense'),
  );
  const intermediateSize = j.int('moe_intermediate_size', { default: 1408, from: hf });
  return { moe: { numExperts, topK, intermediateSize }, mlpLayerTypes };
}
