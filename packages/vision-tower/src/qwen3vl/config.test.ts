import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { Qwen3VlVisionConfig } from './config.js';

/** The vision_config HF 5.17 writes for Qwen3VLConfig() (its defaults, as `to_dict()` prints them). */
const HF_DEFAULT = {
  depth: 27,
  hidden_size: 1152,
  hidden_act: 'gelu_pytorch_tanh',
  intermediate_size: 4304,
  num_heads: 16,
  in_channels: 3,
  patch_size: 16,
  spatial_merge_size: 2,
  temporal_patch_size: 2,
  out_hidden_size: 3584,
  num_position_embeddings: 2304,
  deepstack_visual_indexes: [8, 16, 24],
  initializer_range: 0.02,
  rope_parameters: { rope_theta: 10000.0, rope_type: 'axial' },
  model_type: 'qwen3_vl_vision',
};

const EXPECTED = {
  depth: 27,
  hiddenSize: 1152,
  numHeads: 16,
  intermediateSize: 4304,
  hiddenAct: 'gelu_pytorch_tanh',
  patchSize: 16,
  temporalPatchSize: 2,
  inChannels: 3,
  spatialMergeSize: 2,
  outHiddenSize: 3584,
  numPositionEmbeddings: 2304,
  positionGridSide: 48,
  deepstackVisualIndexes: [8, 16, 24],
  ropeTheta: 10000,
  blockNormEps: 1e-6,
  mergerNormEps: 1e-6,
};

describe('Qwen3VlVisionConfig.fromHfConfig', () => {
  it("reads a whole config.json's vision_config (qwen3_vl_moe's too) and a bare one", () => {
    expect(Qwen3VlVisionConfig.fromHfConfig({ model_type: 'qwen3_vl', vision_config: HF_DEFAULT })).toEqual(EXPECTED);
    const moe = { ...HF_DEFAULT, model_type: 'qwen3_vl_moe_vision', out_hidden_size: 2048 };
    expect(Qwen3VlVisionConfig.fromHfConfig({ model_type: 'qwen3_vl_moe', vision_config: moe }).outHiddenSize).toBe(2048);
    expect(Qwen3VlVisionConfig.fromHfConfig(HF_DEFAULT)).toEqual(EXPECTED);
  });

  it("fills absent fields with HF Qwen3VLVisionConfig's defaults (the same values its to_dict() writes)", () => {
    expect(Qwen3VlVisionConfig.fromHfConfig({ vision_config: {} })).toEqual(EXPECTED);
  });

  it('takes num_attention_heads (HF attribute_map alias) and a bare rope_theta', () => {
    const { num_heads: _, rope_parameters: __, ...rest } = HF_DEFAULT;
    const c = Qwen3VlVisionConfig.fromHfConfig({ ...rest, num_attention_heads: 8, rope_theta: 500 });
    expect([c.numHeads, c.ropeTheta]).toEqual([8, 500]);
  });

  // [case, vision_config change, code, field, message]
  const bad: [string, Record<string, unknown>, string, string, RegExp][] = [
    ['another model type', { model_type: 'qwen2_5_vl' }, 'UNSUPPORTED_CONFIG', 'vision_config.model_type', /"qwen2_5_vl" is not supported/],
    [
      'a head size not divisible by 4',
      { num_heads: 64 },
      'INCONSISTENT_CONFIG',
      'vision_config.num_heads',
      /integer head size divisible by 4.*found 18/,
    ],
    [
      'a deepstack layer past the depth',
      { deepstack_visual_indexes: [8, 27] },
      'INCONSISTENT_CONFIG',
      'vision_config.deepstack_visual_indexes',
      /\[1\] is 27, but the tower has depth 27/,
    ],
    [
      'a deepstack layer twice',
      { deepstack_visual_indexes: [8, 8] },
      'INCONSISTENT_CONFIG',
      'vision_config.deepstack_visual_indexes',
      /lists block 8 twice/,
    ],
    [
      'a non-axial rotary',
      { rope_parameters: { rope_type: 'default', rope_theta: 1 } },
      'UNSUPPORTED_CONFIG',
      'vision_config.rope_parameters.rope_type',
      /only the axial 2D rotary/,
    ],
    ['an unknown activation', { hidden_act: 'swish2' }, 'UNSUPPORTED_CONFIG', 'vision_config.hidden_act', /"swish2"/],
    ['a string depth', { depth: '27' }, 'INVALID_CONFIG', 'vision_config.depth', /found "27"/],
  ];
  for (const [what, change, code, field, msg] of bad) {
    it(`rejects ${what} with ${code}`, () => {
      const call = () => Qwen3VlVisionConfig.fromHfConfig({ vision_config: { ...HF_DEFAULT, ...change } });
      expect(call).toThrow(ConfigError);
      expect(call).toThrow(msg);
      try {
        call();
      } catch (e) {
        expect([(e as ConfigError).code, (e as ConfigError).field]).toEqual([code, field]);
      }
    });
  }
});
