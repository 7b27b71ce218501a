import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, ErnieConfigFields } from '@vlmkit/config';
import { ernieTextConfigFromFields } from '@vlmkit/moe-decoder';
import { resamplerConfigFromFields } from '@vlmkit/resampler';
import { ErnieVisionConfig } from '@vlmkit/vision-tower';
import { describe, expect, it } from 'vitest';
import { FIXTURES } from '../test-utils/fixtures.js';
import { ernie45VLConfig } from './config.js';

type Json = Record<string, unknown>;

const hfTiny = (): Json => JSON.parse(readFileSync(join(FIXTURES, 'ernie-tiny', 'config.json'), 'utf8')) as Json;

/** ernie-tiny's config.json rewritten in Baidu's flat hub layout (the one vLLM reads), same model. */
function baiduTiny(): Json {
  const {
    text_config: text,
    vision_config: vision,
    image_token_id,
    ...rest
  } = hfTiny() as Json & { text_config: Json; vision_config: Json };
  const { mlp_layer_types: _types, rope_parameters: rope, moe_num_experts, ...textFields } = text as Json & { rope_parameters: Json };
  const [, , t] = rope['mrope_section'] as number[];
  return {
    ...rest,
    ...textFields,
    model_type: 'ernie4_5_moe_vl',
    rope_theta: rope['rope_theta'],
    freq_allocation: t,
    moe_num_experts: [moe_num_experts, moe_num_experts],
    moe_layer_start_index: [1, 1],
    pixel_hidden_size: vision['hidden_size'],
    spatial_conv_size: vision['spatial_merge_size'],
    temporal_conv_size: vision['temporal_merge_size'],
    use_temporal_conv: true,
    im_patch_id: image_token_id,
    vision_config: {
      depth: vision['depth'],
      embed_dim: vision['hidden_size'],
      hidden_size: vision['hidden_size'],
      num_heads: vision['num_heads'],
      mlp_ratio: (vision['intermediate_size'] as number) / (vision['hidden_size'] as number),
      patch_size: vision['patch_size'],
      in_channels: vision['in_channels'],
      hidden_act: vision['hidden_act'],
      spatial_merge_size: vision['spatial_merge_size'],
    },
  };
}

describe('ernie45VLConfig: the layout detected once, shared fields read once', () => {
  it('the Baidu layout and its HF equivalent give the same component configs', () => {
    const [hf, baidu] = [ernie45VLConfig(hfTiny(), 'hf'), ernie45VLConfig(baiduTiny(), 'hf')];
    expect([hf.layout, baidu.layout]).toEqual(['hf', 'baidu']);
    expect(baidu.vision).toEqual(hf.vision);
    expect(baidu.resampler).toEqual(hf.resampler);
    expect(baidu.text).toEqual(hf.text);
  });

  it("Baidu layout without rms_norm_eps: the decoder, the resampler's after_norm and vLLM's vision blocks get one default", () => {
    const { rms_norm_eps: _, ...json } = baiduTiny();
    const c = ernie45VLConfig(json);
    // HF reads a flat file's fields into Ernie4_5_VLMoeTextConfig: rms_norm_eps 1e-5.
    expect([c.text.rmsNormEps, c.resampler.rmsNormEps, c.vision.blockNormEps]).toEqual([1e-5, 1e-5, 1e-5]);
  });

  it("Baidu layout: spatial_conv_size (the resampler's) and vision_config.spatial_merge_size (the tower's) must agree", () => {
    const json = baiduTiny();
    (json['vision_config'] as Json)['spatial_merge_size'] = 4;
    let error: unknown;
    try {
      ernie45VLConfig(json);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: 'INCONSISTENT_CONFIG', field: 'spatial_conv_size' });
    expect((error as Error).message).toMatch(/spatial_conv_size \(2\) differs from vision_config\.spatial_merge_size \(4\)/);
  });

  it('components derived from one ErnieConfigFields apply each shared default once', () => {
    const json = hfTiny() as Json & { text_config: Json; vision_config: Json };
    delete json.text_config['rms_norm_eps'];
    delete json.vision_config['rms_norm_eps'];
    delete json.vision_config['spatial_merge_size'];
    const f = ErnieConfigFields.of(json);
    ernieTextConfigFromFields(f);
    ErnieVisionConfig.fromFields(f, { reference: 'hf' });
    resamplerConfigFromFields(f);
    const applied = f.top.defaultsApplied.map((d) => d.field);
    expect(applied.filter((p) => /rms_norm_eps|spatial_merge_size/.test(p)).sort()).toEqual([
      'rms_norm_eps',
      'text_config.rms_norm_eps',
      'vision_config.rms_norm_eps',
      'vision_config.spatial_merge_size',
    ]);
    expect(new Set(applied).size).toBe(applied.length);
  });
});
