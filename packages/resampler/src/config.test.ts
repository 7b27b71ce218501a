import { readFileSync } from 'node:fs';
import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { type ErnieResamplerConfig, fromHfConfig, validateResamplerConfig } from './config.js';
import { FIXTURES } from './test-utils/fixtures.js';

const tinyJson = () => JSON.parse(readFileSync(`${FIXTURES}ernie-tiny/config.json`, 'utf8')) as Record<string, unknown>;

// The Baidu layout that vLLM reads (trust_remote_code configs on the hub), with the 28B's sizes.
const BAIDU = {
  architectures: ['Ernie4_5_VLMoeForConditionalGeneration'],
  hidden_size: 2560,
  rms_norm_eps: 1e-5,
  pixel_hidden_size: 1280,
  spatial_conv_size: 2,
  temporal_conv_size: 2,
  use_temporal_conv: true,
  vision_config: { depth: 32, embed_dim: 1280, hidden_size: 1280, num_heads: 16, patch_size: 14, spatial_merge_size: 2 },
};

describe('fromHfConfig', () => {
  it('reads the HF layout (ernie-tiny config.json)', () => {
    expect(fromHfConfig(tinyJson())).toEqual<ErnieResamplerConfig>({
      visionHiddenSize: 32,
      textHiddenSize: 64,
      spatialMergeSize: 2,
      temporalMergeSize: 2,
      useTemporalConv: true,
      layerNormEps: 1e-6,
      rmsNormEps: 1e-5,
    });
  });

  it('takes HF defaults for absent merge sizes and eps', () => {
    const json = { text_config: { hidden_size: 16 }, vision_config: { hidden_size: 8 } };
    expect(fromHfConfig(json)).toMatchObject({ spatialMergeSize: 2, temporalMergeSize: 2, layerNormEps: 1e-6, rmsNormEps: 1e-5 });
  });

  it('reads the Baidu layout', () => {
    expect(fromHfConfig(BAIDU)).toEqual<ErnieResamplerConfig>({
      visionHiddenSize: 1280,
      textHiddenSize: 2560,
      spatialMergeSize: 2,
      temporalMergeSize: 2,
      useTemporalConv: true,
      layerNormEps: 1e-6,
      rmsNormEps: 1e-5,
    });
    expect(fromHfConfig({ ...BAIDU, use_temporal_conv: false }).useTemporalConv).toBe(false);
  });

  const tiny = tinyJson();
  const text = tiny['text_config'] as Record<string, unknown>;
  const vision = tiny['vision_config'] as Record<string, unknown>;
  it.each<[string, unknown, string, string, RegExp]>([
    ['not an object', [1, 2], 'INVALID_CONFIG', '', /expected a JSON object, found \[1,2\]/],
    ['neither layout', { hidden_size: 64 }, 'MISSING_CONFIG_FIELD', 'text_config', /neither the HF layout/],
    [
      'text hidden missing',
      { ...tiny, text_config: { ...text, hidden_size: undefined } },
      'MISSING_CONFIG_FIELD',
      'text_config.hidden_size',
      /text_config\.hidden_size is missing/,
    ],
    ['vision config missing', { ...tiny, vision_config: undefined }, 'MISSING_CONFIG_FIELD', 'vision_config', /vision_config is missing/],
    [
      'vision config not an object',
      { ...tiny, vision_config: 3 },
      'INVALID_CONFIG',
      'vision_config',
      /vision_config must be a JSON object/,
    ],
    [
      'vision hidden a string',
      { ...tiny, vision_config: { ...vision, hidden_size: '32' } },
      'INVALID_CONFIG',
      'vision_config.hidden_size',
      /vision_config\.hidden_size must be a positive integer, found "32"/,
    ],
    [
      'negative eps',
      { ...tiny, text_config: { ...text, rms_norm_eps: -1 } },
      'INVALID_CONFIG',
      'text_config.rms_norm_eps',
      /text_config\.rms_norm_eps must be a positive number, found -1/,
    ],
    [
      'temporal merge 3',
      { ...tiny, vision_config: { ...vision, temporal_merge_size: 3 } },
      'UNSUPPORTED_CONFIG',
      'temporalMergeSize',
      /temporalMergeSize 3/,
    ],
    [
      'pixel_hidden_size disagrees',
      { ...BAIDU, pixel_hidden_size: 1024 },
      'INCONSISTENT_CONFIG',
      'pixel_hidden_size',
      /pixel_hidden_size 1024 differs from vision_config\.hidden_size 1280/,
    ],
    [
      'use_temporal_conv a string',
      { ...BAIDU, use_temporal_conv: 'yes' },
      'INVALID_CONFIG',
      'use_temporal_conv',
      /use_temporal_conv must be true or false/,
    ],
    [
      'Baidu layout without a vision width',
      { hidden_size: 64, spatial_conv_size: 2 },
      'MISSING_CONFIG_FIELD',
      'pixel_hidden_size',
      /pixel_hidden_size is missing/,
    ],
  ])('refuses %s', (_, json, code, field, message) => {
    expect(() => fromHfConfig(json)).toThrow(
      expect.objectContaining({ name: 'ConfigError', code, field, message: expect.stringMatching(message) }),
    );
    expect(() => fromHfConfig(json)).toThrow(ConfigError);
  });

  it("Baidu layout defaults: Baidu's Ernie4_5_VLMoEConfig merge sizes and temporal conv, vLLM's LayerNorm eps, the text config's rms_norm_eps", () => {
    // The top-level rms_norm_eps is the text model's, read once for the decoder and after_norm: HF Ernie4_5_VLMoeTextConfig's 1e-5.
    expect(fromHfConfig({ hidden_size: 64, pixel_hidden_size: 32 })).toEqual<ErnieResamplerConfig>({
      visionHiddenSize: 32,
      textHiddenSize: 64,
      spatialMergeSize: 2,
      temporalMergeSize: 2,
      useTemporalConv: true,
      layerNormEps: 1e-6,
      rmsNormEps: 1e-5,
    });
  });

  it('validateResamplerConfig checks hand-built configs', () => {
    const ok = fromHfConfig(tinyJson());
    expect(validateResamplerConfig(ok)).toBe(ok);
    expect(() => validateResamplerConfig({ ...ok, visionHiddenSize: 0 })).toThrow(
      expect.objectContaining({ name: 'ConfigError', code: 'INVALID_CONFIG', field: 'visionHiddenSize' }),
    );
    expect(() => validateResamplerConfig({ ...ok, visionHiddenSize: 0 })).toThrow(/visionHiddenSize must be a positive integer/);
    expect(() => validateResamplerConfig({ ...ok, rmsNormEps: Number.NaN })).toThrow(/rmsNormEps/);
    expect(validateResamplerConfig({ ...ok, useTemporalConv: false, temporalMergeSize: 3 }).temporalMergeSize).toBe(3);
  });
});
