import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { MoeDecoderError } from '../errors.js';
import { readJson } from '../test-utils/fixtures.js';
import { graniteTextConfigFromHf } from './config.js';
import { checkGraniteLevels, graniteDeepstackLevels, graniteDeepstackPlan } from './levels.js';
import { graniteTextExpectedParameters } from './parameters.js';
import { graniteDecodePositions, granitePositionIds } from './rotary.js';

/** granite-4.0-3b-vision as MODEL_NOTES.md records it: text_config in the hub's granitemoehybrid layout. */
const hub3b = {
  model_type: 'granite4_vision',
  tie_word_embeddings: true,
  deepstack_layer_map: [
    [-19, 9],
    [-13, 6],
    [-7, 3],
    [-1, 0],
  ],
  spatial_target_layers: [12, 15, 18, 21],
  use_spatial_sampling: true,
  text_config: {
    model_type: 'granitemoehybrid',
    layer_types: Array(40).fill('attention'),
    num_local_experts: 0,
    hidden_size: 2560,
    shared_intermediate_size: 8192,
    intermediate_size: 1024,
    num_hidden_layers: 40,
    num_attention_heads: 40,
    num_key_value_heads: 8,
    vocab_size: 100353,
    embedding_multiplier: 12,
    attention_multiplier: 0.015625,
    residual_multiplier: 0.22,
    logits_scaling: 10,
    rope_theta: 1e7,
    rms_norm_eps: 1e-5,
    position_embedding_type: 'rope',
  },
};

/** The ConfigError's `code field` (fails the test on another error or none). */
const codeOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return `${(e as ConfigError).code} ${(e as ConfigError).field}`;
  }
  return undefined;
};

describe('graniteTextConfigFromHf', () => {
  it('reads the hub granitemoehybrid text_config: shared_intermediate_size, top-level rope_theta, derived head_dim, tied', () => {
    expect(graniteTextConfigFromHf(hub3b)).toEqual({
      hiddenSize: 2560,
      numHiddenLayers: 40,
      numAttentionHeads: 40,
      numKeyValueHeads: 8,
      headDim: 64,
      intermediateSize: 8192,
      vocabSize: 100353,
      rmsNormEps: 1e-5,
      ropeTheta: 1e7,
      embeddingMultiplier: 12,
      attentionMultiplier: 0.015625,
      residualMultiplier: 0.22,
      logitsScaling: 10,
      tieWordEmbeddings: true,
      attentionBias: false,
      mlpBias: false,
    });
  });

  it("reads HF 5.17's granite4_vision_text (test-fixtures/granite-tiny)", async () => {
    const c = graniteTextConfigFromHf(await readJson('granite-tiny', 'config.json'));
    expect(c).toMatchObject({
      hiddenSize: 64,
      numHiddenLayers: 8,
      headDim: 16,
      intermediateSize: 128,
      ropeTheta: 10000,
      embeddingMultiplier: 2,
      attentionMultiplier: 0.5,
      residualMultiplier: 0.7,
      logitsScaling: 0.75,
      tieWordEmbeddings: true,
    });
  });

  it('HF defaults: multipliers 1, rms eps 1e-6, theta 1e4, untied', () => {
    const c = graniteTextConfigFromHf({
      hidden_size: 32,
      num_hidden_layers: 1,
      num_attention_heads: 2,
      intermediate_size: 64,
      vocab_size: 10,
    });
    expect(c).toMatchObject({
      numKeyValueHeads: 2,
      headDim: 16,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      embeddingMultiplier: 1,
      attentionMultiplier: 1,
      residualMultiplier: 1,
      logitsScaling: 1,
      tieWordEmbeddings: false,
    });
  });

  it('refuses what it cannot build, with a code and the field', () => {
    const t = hub3b.text_config;
    const withText = (patch: Record<string, unknown>) => () => graniteTextConfigFromHf({ ...hub3b, text_config: { ...t, ...patch } });
    expect(codeOf(withText({ layer_types: ['mamba', ...Array(39).fill('attention')] }))).toBe(
      'UNSUPPORTED_CONFIG text_config.layer_types[0]',
    );
    expect(codeOf(withText({ num_local_experts: 32 }))).toBe('UNSUPPORTED_CONFIG text_config.num_local_experts');
    expect(codeOf(withText({ hidden_act: 'gelu' }))).toBe('UNSUPPORTED_CONFIG text_config.hidden_act');
    expect(codeOf(withText({ rope_parameters: { rope_type: 'yarn', rope_theta: 1e7 } }))).toBe(
      'UNSUPPORTED_CONFIG text_config.rope_parameters.rope_type',
    );
    expect(codeOf(withText({ model_type: 'llama' }))).toBe('UNSUPPORTED_CONFIG text_config.model_type');
    expect(codeOf(withText({ num_key_value_heads: 7 }))).toBe('INCONSISTENT_CONFIG text_config.num_key_value_heads');
    expect(codeOf(withText({ layer_types: ['attention'] }))).toBe('INCONSISTENT_CONFIG text_config.layer_types');
    expect(codeOf(withText({ hidden_size: '2560' }))).toBe('INVALID_CONFIG text_config.hidden_size');
    expect(codeOf(withText({ logits_scaling: 0 }))).toBe('INVALID_CONFIG text_config.logits_scaling');
    expect(codeOf(() => graniteTextConfigFromHf([]))).toBe('INVALID_CONFIG ');
    expect(codeOf(withText({ vocab_size: undefined }))).toBe('MISSING_CONFIG_FIELD text_config.vocab_size');
    expect(() => withText({ vocab_size: undefined })()).toThrow(
      'Granite text config: text_config.vocab_size is missing; expected a positive integer.',
    );
  });

  it('expected parameters: packed qkv_proj / gate_up_proj shapes, biases only when configured', () => {
    const c = graniteTextConfigFromHf(hub3b);
    const p = new Map(graniteTextExpectedParameters(c).map((x) => [x.name, x.shape]));
    // A dry run of the decoder: tied, the head reads embed_tokens.weight, so no lm_head.weight is listed.
    expect(p.size).toBe(1 + 40 * 6 + 1);
    expect(p.get('layers.39.self_attn.qkv_proj.weight')).toEqual([(40 + 16) * 64, 2560]);
    expect(p.get('layers.0.mlp.gate_up_proj.weight')).toEqual([2 * 8192, 2560]);
    expect(p.has('lm_head.weight')).toBe(false);
    expect(graniteTextExpectedParameters({ ...c, tieWordEmbeddings: false }).find((x) => x.name === 'lm_head.weight')?.shape).toEqual([
      100353, 2560,
    ]);
    const biased = graniteTextExpectedParameters({ ...c, attentionBias: true, mlpBias: true });
    expect(biased.length).toBe(1 + 40 * 10 + 1);
    expect(biased.find((x) => x.name === 'layers.0.self_attn.qkv_proj.bias')?.shape).toEqual([(40 + 16) * 64]);
  });
});

describe('deepstack levels and positions', () => {
  it('levels: deepstack_layer_map order, then the spatial target layers; use_spatial_sampling false drops them', () => {
    expect(graniteDeepstackLevels(hub3b)).toEqual([9, 6, 3, 0, 12, 15, 18, 21]);
    expect(graniteDeepstackLevels({ ...hub3b, use_spatial_sampling: false })).toEqual([9, 6, 3, 0]);
    // Absent spatial fields take HF's defaults (Granite4VisionConfig: [12, 15, 18, 21] from vision layer -1).
    const { use_spatial_sampling: _, spatial_target_layers: __, ...bare } = hub3b;
    expect(graniteDeepstackLevels(bare)).toEqual([9, 6, 3, 0, 12, 15, 18, 21]);
    expect(graniteDeepstackPlan(hub3b).slice(3, 5)).toEqual([
      { kind: 'layerwise', projector: 3, visionLayer: -1, llmLayer: 0 },
      { kind: 'spatial', projector: 0, visionLayer: -1, llmLayer: 12 },
    ]);
    expect(codeOf(() => graniteDeepstackLevels({ deepstack_layer_map: [[1]] }))).toBe('INVALID_CONFIG deepstack_layer_map');
    expect(codeOf(() => graniteDeepstackLevels({ spatial_target_layers: [1] }))).toBe('MISSING_CONFIG_FIELD deepstack_layer_map');
    expect(codeOf(() => graniteDeepstackLevels({ ...hub3b, spatial_target_layers: [1, 2, 3, 4, 5] }))).toBe(
      'INVALID_CONFIG spatial_target_layers',
    );
    expect(codeOf(() => graniteDeepstackLevels({ ...hub3b, use_spatial_sampling: 'yes' }))).toBe('INVALID_CONFIG use_spatial_sampling');
  });

  it('graniteDeepstackPlan with the decoder depth: the same checks as checkGraniteLevels, as config errors naming the field', () => {
    expect(graniteDeepstackPlan(hub3b, 40)).toHaveLength(8);
    expect(codeOf(() => graniteDeepstackPlan(hub3b, 20))).toBe('INCONSISTENT_CONFIG spatial_target_layers[3]');
    expect(() => graniteDeepstackPlan(hub3b, 20)).toThrow(/level 7 targets LLM layer 21; the decoder has layers 0\.\.19/);
    const twice = { ...hub3b, spatial_target_layers: [12, 15, 9, 21] };
    expect(codeOf(() => graniteDeepstackPlan(twice, 40))).toBe('INCONSISTENT_CONFIG spatial_target_layers[2]');
    expect(() => graniteDeepstackPlan(twice, 40)).toThrow(/levels 0 and 6 both target LLM layer 9/);
  });

  it('checkGraniteLevels refuses a layer outside the decoder and two levels on one layer', () => {
    expect(() => checkGraniteLevels([9, 6, 3, 0, 12, 15, 18, 21], 40)).not.toThrow();
    expect(() => checkGraniteLevels([0, 40], 40)).toThrow(MoeDecoderError);
    expect(() => checkGraniteLevels([0, 40], 40)).toThrow(/level 1 targets LLM layer 40/);
    expect(() => checkGraniteLevels([3, 5, 3], 40)).toThrow(/levels 0 and 2 both target LLM layer 3/);
  });

  it('position ids of a left-padded batch (hand derived: cumsum(mask) - 1, 0 on padding) and of the next tokens', () => {
    // row 0: [pad, pad, a, b] -> 0 0 0 1; row 1: [a, b, c, d] -> 0 1 2 3
    expect(Array.from(granitePositionIds([0, 0, 1, 1, 1, 1, 1, 1], 2), Number)).toEqual([0, 0, 0, 1, 0, 1, 2, 3]);
    // HF generate's fill (masked_fill_(mask == 0, 1)) on padding
    expect(Array.from(granitePositionIds([0, 0, 1, 1, 1, 1, 1, 1], 2, 1), Number)).toEqual([1, 1, 0, 1, 0, 1, 2, 3]);
    // the next token of each row sits at its real-token count: 2 and 4; two steps ahead: 2 3 / 4 5
    expect(Array.from(graniteDecodePositions([2, 4], 2), Number)).toEqual([2, 3, 4, 5]);
  });
});
