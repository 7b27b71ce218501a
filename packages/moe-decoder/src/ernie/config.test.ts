import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { readJson } from '../test-utils/fixtures.js';
import { ernieTextConfigFromHf } from './config.js';
import { ernieTextExpectedParameters } from './parameters.js';

/** The 28B text config in Baidu's hub layout, as MODEL_NOTES.md records it. */
const baidu28b = {
  hidden_size: 2560,
  intermediate_size: 12288,
  num_hidden_layers: 28,
  num_attention_heads: 20,
  num_key_value_heads: 4,
  vocab_size: 103424,
  rms_norm_eps: 1e-5,
  rope_theta: 500000,
  freq_allocation: 20,
  tie_word_embeddings: true,
  use_bias: false,
  hidden_act: 'silu',
  moe_num_experts: [64, 64],
  moe_intermediate_size: [1536, 512],
  moe_k: 6,
  moe_num_shared_experts: 2,
  moe_layer_start_index: [1, 1],
  moe_layer_end_index: [29, 28],
  moe_layer_interval: 1,
};

describe('ernieTextConfigFromHf', () => {
  it("reads Baidu's layout: head_dim derived, layer 0 dense, 1..27 MoE", () => {
    const c = ernieTextConfigFromHf(baidu28b);
    expect(c.headDim).toBe(128);
    expect(c.freqAllocation).toBe(20);
    expect(c.mlpLayerTypes[0]).toBe('dense');
    expect(c.mlpLayerTypes.slice(1).every((t) => t === 'sparse')).toBe(true);
    expect(c.moe).toEqual({ numExperts: [64, 64], topK: 6, intermediateSize: [1536, 512], numSharedExperts: 2, normMin: 1e-12 });
  });

  it("reads HF 5.17's layout (text_config, mrope_section, mlp_layer_types)", async () => {
    const c = ernieTextConfigFromHf(await readJson('ernie-tiny', 'config.json'));
    expect(c).toMatchObject({
      hiddenSize: 64,
      headDim: 16,
      numKeyValueHeads: 2,
      vocabSize: 256,
      ropeTheta: 500000,
      freqAllocation: 2,
      intermediateSize: 128,
    });
    expect(c.mlpLayerTypes).toEqual(['dense', 'sparse', 'sparse', 'sparse']);
    expect(c.moe.numExperts).toEqual([4, 4]);
    expect(c.moe.intermediateSize).toEqual([64, 32]);
  });

  it('applies moe_layer_interval and the start/end range', () => {
    const c = ernieTextConfigFromHf({
      ...baidu28b,
      num_hidden_layers: 6,
      moe_layer_start_index: [2, 2],
      moe_layer_end_index: [5, 5],
      moe_layer_interval: 2,
    });
    expect(c.mlpLayerTypes).toEqual(['dense', 'dense', 'dense', 'sparse', 'dense', 'sparse']);
  });

  // [case, config.json, code, field path, message]
  const bad: [string, Record<string, unknown>, string, string, RegExp][] = [
    ['missing hidden_size', { ...baidu28b, hidden_size: undefined }, 'MISSING_CONFIG_FIELD', 'hidden_size', /hidden_size is missing/],
    [
      'heads not a multiple of kv heads',
      { ...baidu28b, num_key_value_heads: 3 },
      'INCONSISTENT_CONFIG',
      'num_key_value_heads',
      /num_key_value_heads \(3\) must divide num_attention_heads \(20\)/,
    ],
    [
      'mrope_section that does not add up',
      { text_config: { ...baidu28b, rope_parameters: { rope_theta: 5e5, mrope_section: [22, 22, 10] } } },
      'INCONSISTENT_CONFIG',
      'text_config.rope_parameters.mrope_section',
      /mrope_section \[22, 22, 10\] must be \[n, n, t\] with 2n \+ t = head_dim \/ 2 = 64/,
    ],
    ['odd h/w share', { ...baidu28b, freq_allocation: 21 }, 'INCONSISTENT_CONFIG', 'freq_allocation', /freq_allocation 21/],
    ['moe_k above the experts', { ...baidu28b, moe_k: 65 }, 'INCONSISTENT_CONFIG', 'moe_k', /moe_k \(65\) exceeds the 64 text experts/],
    [
      'a string where a number goes',
      { text_config: { ...baidu28b, rms_norm_eps: '1e-5' } },
      'INVALID_CONFIG',
      'text_config.rms_norm_eps',
      /text_config\.rms_norm_eps must be a positive number, found "1e-5"/,
    ],
    ['biased projections', { ...baidu28b, use_bias: true }, 'UNSUPPORTED_CONFIG', 'use_bias', /use_bias true is not supported/],
    ['another activation', { ...baidu28b, hidden_act: 'gelu' }, 'UNSUPPORTED_CONFIG', 'hidden_act', /hidden_act "gelu" is not supported/],
    [
      'a layer with only text experts',
      { ...baidu28b, moe_layer_end_index: [27, 26] },
      'UNSUPPORTED_CONFIG',
      'moe_layer_end_index',
      /layer 27 .* only text experts/,
    ],
    [
      'mlp_layer_types of the wrong length',
      { ...baidu28b, mlp_layer_types: ['dense'] },
      'INCONSISTENT_CONFIG',
      'mlp_layer_types',
      /mlp_layer_types has 1 entries; expected one per layer: 28/,
    ],
    [
      'mlp_layer_types with another type',
      { ...baidu28b, mlp_layer_types: ['moe'] },
      'INVALID_CONFIG',
      'mlp_layer_types',
      /'dense' or 'sparse'/,
    ],
    ['not an object', [] as unknown as Record<string, unknown>, 'INVALID_CONFIG', '', /^ERNIE text config: expected a JSON object/],
  ];
  for (const [name, json, code, field, msg] of bad) {
    it(`refuses ${name} with ${code}, naming ${field || 'the object'}`, () => {
      let err: unknown;
      try {
        ernieTextConfigFromHf(json);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).code).toBe(code);
      expect((err as ConfigError).field).toBe(field);
      expect((err as Error).message).toMatch(msg);
    });
  }

  it('fills absent fields with their cited defaults (HF Ernie4_5_VLMoeTextConfig, vLLM freq_allocation)', () => {
    const c = ernieTextConfigFromHf({
      hidden_size: 2560,
      intermediate_size: 12288,
      num_hidden_layers: 28,
      num_attention_heads: 20,
      vocab_size: 103424,
    });
    expect(c).toMatchObject({ numKeyValueHeads: 4, rmsNormEps: 1e-5, ropeTheta: 500000, freqAllocation: 20, tieWordEmbeddings: true });
    expect(c.moe).toEqual({ numExperts: [64, 64], topK: 6, intermediateSize: [1536, 512], numSharedExperts: 2, normMin: 1e-12 });
    expect(c.mlpLayerTypes).toEqual(['dense', ...Array(27).fill('sparse')]);
  });
});

describe('ernieTextExpectedParameters', () => {
  // The list is a dry run of the decoder, so it holds what the chosen expert path reads (per-expert
  // tensors for 'sparse', the stacked ones for 'all', never both) and, tied, no lm_head.weight.
  it('lists the docs/parameter-names.md names with their shapes (28B: counts and a few shapes)', () => {
    const config = ernieTextConfigFromHf(baidu28b);
    const params = ernieTextExpectedParameters(config);
    const byName = new Map(params.map((p) => [p.name, p.shape]));
    expect(byName.get('layers.0.self_attn.qkv_proj.weight')).toEqual([(20 + 8) * 128, 2560]);
    expect(byName.get('layers.0.mlp.gate_up_proj.weight')).toEqual([2 * 12288, 2560]);
    expect(byName.get('layers.27.mlp.shared_experts.gate_up_proj.weight')).toEqual([2 * 3072, 2560]);
    expect(byName.get('layers.5.mlp.vision_experts_gate.weight')).toEqual([64, 2560]);
    expect(byName.get('layers.1.mlp.vision_experts.63.down_proj.weight')).toEqual([2560, 512]);
    expect(byName.has('layers.1.mlp.text_experts.w13_weight')).toBe(false);
    expect(byName.has('lm_head.weight')).toBe(false); // tied: the head reads embed_tokens.weight
    // embed + norm, 4 per layer, dense layer 2, MoE layers 2 per modality + 2 shared + 3 per expert.
    expect(params.length).toBe(2 + 28 * 4 + 2 + 27 * (6 + 3 * (64 + 64)));

    const untied = new Map(ernieTextExpectedParameters({ ...config, tieWordEmbeddings: false }).map((p) => [p.name, p.shape]));
    expect(untied.get('lm_head.weight')).toEqual([103424, 2560]);
  });
});
