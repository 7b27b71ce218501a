import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { qwen3VlTextConfigFromHf } from './config.js';
import { qwen3VlTextExpectedParameters } from './parameters.js';

/** Qwen3-VL-30B-A3B-Instruct's text_config in the hub's layout (rope_scaling + rope_theta, num_experts). */
const moe30b = {
  model_type: 'qwen3_vl_moe',
  tie_word_embeddings: false,
  text_config: {
    model_type: 'qwen3_vl_moe_text',
    decoder_sparse_step: 1,
    head_dim: 128,
    hidden_act: 'silu',
    hidden_size: 2048,
    intermediate_size: 6144,
    mlp_only_layers: [],
    moe_intermediate_size: 768,
    norm_topk_prob: true,
    num_attention_heads: 32,
    num_experts: 128,
    num_experts_per_tok: 8,
    num_hidden_layers: 48,
    num_key_value_heads: 4,
    rms_norm_eps: 1e-6,
    rope_scaling: { mrope_interleaved: true, mrope_section: [24, 20, 20], rope_type: 'default' },
    rope_theta: 5000000,
    vocab_size: 151936,
  },
};

/** The same as HF 5.17's save_pretrained writes it: rope_parameters, num_local_experts. */
function asHf517(c: typeof moe30b) {
  const { rope_scaling, rope_theta, num_experts, ...text } = c.text_config;
  return { ...c, text_config: { ...text, num_local_experts: num_experts, rope_parameters: { ...rope_scaling, rope_theta } } };
}

describe('qwen3VlTextConfigFromHf', () => {
  it("reads the hub's and HF 5.17's layouts of Qwen3-VL-30B-A3B alike", () => {
    const hub = qwen3VlTextConfigFromHf(moe30b);
    expect(hub).toMatchObject({
      hiddenSize: 2048,
      numHiddenLayers: 48,
      numAttentionHeads: 32,
      numKeyValueHeads: 4,
      headDim: 128,
      ropeTheta: 5000000,
      mropeSection: [24, 20, 20],
      moe: { numExperts: 128, topK: 8, intermediateSize: 768 },
      tieWordEmbeddings: false,
    });
    expect(hub.mlpLayerTypes.every((t) => t === 'sparse')).toBe(true);
    expect(qwen3VlTextConfigFromHf(asHf517(moe30b))).toEqual(hub);
  });

  it('mlp_only_layers and decoder_sparse_step make dense layers, as HF Qwen3VLMoeTextDecoderLayer', () => {
    const c = qwen3VlTextConfigFromHf({
      ...moe30b,
      text_config: { ...moe30b.text_config, num_hidden_layers: 6, mlp_only_layers: [1], decoder_sparse_step: 2 },
    });
    expect(c.mlpLayerTypes).toEqual(['dense', 'dense', 'dense', 'sparse', 'dense', 'sparse']);
  });

  it("ties the head by the top-level tie_word_embeddings only, and takes the dense defaults from HF's text config", () => {
    const dense = {
      model_type: 'qwen3_vl',
      text_config: { hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4, tie_word_embeddings: true },
    };
    const c = qwen3VlTextConfigFromHf(dense);
    // HF Qwen3VLConfig.tie_word_embeddings defaults to false; text_config's is not read. head_dim defaults to 128.
    expect(c).toMatchObject({ tieWordEmbeddings: false, headDim: 128, numKeyValueHeads: 4, moe: undefined, ropeTheta: 500000 });
    expect(qwen3VlTextConfigFromHf({ ...dense, tie_word_embeddings: true }).tieWordEmbeddings).toBe(true);
    expect(qwen3VlTextExpectedParameters(c).some((p) => p.name === 'lm_head.weight')).toBe(true);
  });

  it('refuses what HF would not build, naming the field', () => {
    const bad = (text: Record<string, unknown>) => () =>
      qwen3VlTextConfigFromHf({ ...moe30b, text_config: { ...moe30b.text_config, ...text } });
    expect(bad({ norm_topk_prob: false })).toThrow(/text_config\.norm_topk_prob/);
    expect(bad({ rope_scaling: { rope_type: 'default', mrope_section: [24, 20, 10] } })).toThrow(/mrope_section.*64/);
    expect(bad({ rope_scaling: { rope_type: 'yarn', mrope_section: [24, 20, 20] } })).toThrow(ConfigError);
    expect(bad({ num_experts_per_tok: 129 })).toThrow(/num_experts_per_tok/);
    expect(bad({ hidden_act: 'gelu' })).toThrow(/hidden_act/);
    expect(() => qwen3VlTextConfigFromHf({ model_type: 'qwen2_vl' })).toThrow(/model_type/);
  });
});
