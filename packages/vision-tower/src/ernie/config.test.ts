import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { FIXTURES } from '../test-utils/fixtures.js';
import { ErnieVisionConfig } from './config.js';

const hfJson = JSON.parse(readFileSync(join(FIXTURES, 'ernie-tiny', 'config.json'), 'utf8')) as Record<string, unknown>;

/** Baidu's hub layout (baidu/ERNIE-4.5-VL-28B-A3B-PT, as MODEL_NOTES and vLLM read it): top-level rms_norm_eps, embed_dim + mlp_ratio. */
const baiduJson = {
  rms_norm_eps: 1e-5,
  hidden_size: 2560,
  vision_config: {
    depth: 32,
    embed_dim: 1280,
    hidden_size: 1280,
    hidden_act: 'quick_gelu',
    in_channels: 3,
    mlp_ratio: 4,
    num_heads: 16,
    patch_size: 14,
    spatial_merge_size: 2,
  },
};

describe('ErnieVisionConfig.fromHfConfig', () => {
  it("reads HF 5.17's layout (the fixture's config.json)", () => {
    expect(ErnieVisionConfig.fromHfConfig(hfJson, { reference: 'hf' })).toEqual({
      depth: 2,
      hiddenSize: 32,
      numHeads: 2,
      intermediateSize: 128,
      patchSize: 14,
      inChannels: 3,
      spatialMergeSize: 2,
      hiddenAct: 'quick_gelu',
      ropeTheta: 10000,
      blockNormEps: 1e-6,
      finalNormEps: 1e-6,
    });
  });

  it("reads Baidu's hub layout: Dv = embed_dim, intermediate = embed_dim * mlp_ratio", () => {
    const c = ErnieVisionConfig.fromHfConfig(baiduJson);
    expect([c.depth, c.hiddenSize, c.numHeads, c.intermediateSize, c.patchSize]).toEqual([32, 1280, 16, 5120, 14]);
  });

  it("eps: vLLM's blocks use the top-level rms_norm_eps and its ln 1e-6; HF uses vision_config.rms_norm_eps everywhere", () => {
    expect(ErnieVisionConfig.fromHfConfig(baiduJson)).toMatchObject({ blockNormEps: 1e-5, finalNormEps: 1e-6 });
    expect(ErnieVisionConfig.fromHfConfig(baiduJson, { reference: 'vllm' })).toMatchObject({ blockNormEps: 1e-5, finalNormEps: 1e-6 });
    expect(ErnieVisionConfig.fromHfConfig(baiduJson, { reference: 'hf' })).toMatchObject({ blockNormEps: 1e-6, finalNormEps: 1e-6 });
    const odd = { ...hfJson, rms_norm_eps: 0.25, vision_config: { ...(hfJson.vision_config as object), rms_norm_eps: 0.125 } };
    expect(ErnieVisionConfig.fromHfConfig(odd, { reference: 'vllm' })).toMatchObject({ blockNormEps: 0.25, finalNormEps: 1e-6 });
    expect(ErnieVisionConfig.fromHfConfig(odd, { reference: 'hf' })).toMatchObject({ blockNormEps: 0.125, finalNormEps: 0.125 });
    // HF's layout has no top-level rms_norm_eps: vLLM's getattr falls back to 1e-6.
    expect(ErnieVisionConfig.fromHfConfig(hfJson, { reference: 'vllm' })).toMatchObject({ blockNormEps: 1e-6, finalNormEps: 1e-6 });
    expect(ErnieVisionConfig.fromHfConfig(baiduJson, { layerNormEps: 1e-3 })).toMatchObject({ blockNormEps: 1e-3, finalNormEps: 1e-3 });
  });

  it('accepts a bare vision_config object', () => {
    expect(ErnieVisionConfig.fromHfConfig(hfJson.vision_config).hiddenSize).toBe(32);
  });

  const vc = hfJson.vision_config as Record<string, unknown>;
  // [case, config.json, code, field path, message]
  const bad: [string, unknown, string, string, RegExp][] = [
    ['not an object', 42, 'INVALID_CONFIG', '', /^ERNIE vision config: expected a JSON object, found 42\./],
    ['no vision_config', { text_config: {} }, 'MISSING_CONFIG_FIELD', 'vision_config', /vision_config is missing/],
    [
      'depth 0',
      { vision_config: { ...vc, depth: 0 } },
      'INVALID_CONFIG',
      'vision_config.depth',
      /vision_config\.depth must be a positive integer, found 0/,
    ],
    [
      'no width',
      { vision_config: { ...vc, hidden_size: undefined } },
      'MISSING_CONFIG_FIELD',
      'vision_config.hidden_size',
      /hidden_size .* or embed_dim/,
    ],
    [
      'width mismatch',
      { vision_config: { ...vc, embed_dim: 64 } },
      'INCONSISTENT_CONFIG',
      'vision_config.embed_dim',
      /embed_dim 64 and hidden_size 32 must be equal/,
    ],
    ['heads do not divide', { vision_config: { ...vc, num_heads: 3 } }, 'INCONSISTENT_CONFIG', 'vision_config.num_heads', /num_heads 3/],
    ['head size not /4', { vision_config: { ...vc, num_heads: 16 } }, 'INCONSISTENT_CONFIG', 'vision_config.num_heads', /divisible by 4/],
    [
      'no mlp width',
      { vision_config: { ...vc, intermediate_size: undefined } },
      'MISSING_CONFIG_FIELD',
      'vision_config.intermediate_size',
      /intermediate_size or mlp_ratio/,
    ],
    [
      'activation',
      { vision_config: { ...vc, hidden_act: 'relu6' } },
      'UNSUPPORTED_CONFIG',
      'vision_config.hidden_act',
      /"relu6" is not supported/,
    ],
    [
      'non-square patch',
      { vision_config: { ...vc, patch_size: [14, 16] } },
      'INVALID_CONFIG',
      'vision_config.patch_size',
      /a positive integer or a square \[n, n\], found \[14,16\]/,
    ],
    [
      'rope type',
      { vision_config: { ...vc, rope_parameters: { rope_type: 'yarn' } } },
      'UNSUPPORTED_CONFIG',
      'vision_config.rope_parameters.rope_type',
      /"yarn" is not supported; expected one of 'axial', 'default'\. Only the axial 2D rotary is built\./,
    ],
    [
      'a string eps at the top (vLLM reads it)',
      { ...hfJson, rms_norm_eps: '1e-5' },
      'INVALID_CONFIG',
      'rms_norm_eps',
      /rms_norm_eps must be a positive number, found "1e-5"/,
    ],
    [
      'a bare vision_config is named as one',
      { ...vc, depth: 1.5 },
      'INVALID_CONFIG',
      'vision_config.depth',
      /vision_config\.depth must be a positive integer, found 1\.5/,
    ],
  ];
  for (const [what, json, code, field, msg] of bad) {
    it(`rejects ${what} with ${code}`, () => {
      let err: unknown;
      try {
        ErnieVisionConfig.fromHfConfig(json);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).code).toBe(code);
      expect((err as ConfigError).field).toBe(field);
      expect((err as Error).message).toMatch(msg);
    });
  }

  it("Baidu's mlp_ratio is truncated as vLLM's int(dim * mlp_ratio) does", () => {
    const c = ErnieVisionConfig.fromHfConfig({ vision_config: { ...baiduJson.vision_config, mlp_ratio: 2.6668 } });
    expect(c.intermediateSize).toBe(3413); // 1280 * 2.6668 = 3413.504: truncated, not rounded
  });

  it("absent fields take HF Ernie4_5_VLMoeVisionConfig's defaults (in_channels 3, merge 2, quick_gelu, eps 1e-6) and theta 10000", () => {
    const { in_channels: _, spatial_merge_size: __, hidden_act: ___, ...rest } = baiduJson.vision_config;
    expect(ErnieVisionConfig.fromHfConfig({ vision_config: rest }, { reference: 'hf' })).toMatchObject({
      inChannels: 3,
      spatialMergeSize: 2,
      hiddenAct: 'quick_gelu',
      ropeTheta: 10000,
      blockNormEps: 1e-6,
    });
  });
});
