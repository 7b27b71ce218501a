import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '@vlmkit/config';
import { Graph, tensorFromArray, Weights } from '@vlmkit/onnx-graph';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { VisionTowerError } from '../errors.js';
import { FIXTURES } from '../test-utils/fixtures.js';
import { randn, relMaxError, session } from '../test-utils/ort.js';
import { randomWeights } from '../test-utils/random-weights.js';
import { SiglipVisionConfig } from './config.js';
import { expectedSiglipVisionParameters } from './parameters.js';
import { buildSiglipVisionTower, buildSiglipVisionTowerModel } from './vision-transformer.js';

const granite = JSON.parse(readFileSync(join(FIXTURES, 'granite-tiny', 'config.json'), 'utf8')) as Record<string, unknown>;

describe('SiglipVisionConfig.fromHfConfig', () => {
  it("reads Granite 4 Vision's vision_config", () => {
    expect(SiglipVisionConfig.fromHfConfig(granite)).toEqual({
      hiddenSize: 32,
      intermediateSize: 64,
      numHiddenLayers: 4,
      numAttentionHeads: 2,
      numChannels: 3,
      imageSize: 64,
      patchSize: 8,
      hiddenAct: 'gelu_pytorch_tanh',
      layerNormEps: 1e-6,
    });
  });

  it("fills absent fields with HF SiglipVisionConfig's defaults", () => {
    expect(
      SiglipVisionConfig.fromHfConfig({
        model_type: 'siglip_vision_model',
        num_hidden_layers: 27,
        hidden_size: 1152,
        intermediate_size: 4304,
        num_attention_heads: 16,
        image_size: 384,
      }),
    ).toEqual({
      hiddenSize: 1152,
      intermediateSize: 4304,
      numHiddenLayers: 27,
      numAttentionHeads: 16,
      numChannels: 3,
      imageSize: 384,
      patchSize: 16,
      hiddenAct: 'gelu_pytorch_tanh',
      layerNormEps: 1e-6,
    });
  });

  const vc = granite.vision_config as Record<string, unknown>;
  // [case, config.json, code, field path, message]
  const bad: [string, unknown, string, string, RegExp][] = [
    [
      'another model type',
      { vision_config: { ...vc, model_type: 'clip_vision_model' } },
      'INVALID_CONFIG',
      'vision_config.model_type',
      /"clip_vision_model" is not supported; expected one of 'siglip_vision_model', 'siglip2_vision_model'/,
    ],
    [
      'heads that do not divide',
      { vision_config: { ...vc, num_attention_heads: 5 } },
      'INCONSISTENT_CONFIG',
      'vision_config.num_attention_heads',
      /num_attention_heads 5 does not divide hidden_size 32/,
    ],
    [
      'image not a multiple of the patch',
      { vision_config: { ...vc, image_size: 60 } },
      'INCONSISTENT_CONFIG',
      'vision_config.image_size',
      /image_size must be a multiple of patch_size 8, found 60/,
    ],
    [
      'an unknown activation',
      { vision_config: { ...vc, hidden_act: 'swish2' } },
      'UNSUPPORTED_CONFIG',
      'vision_config.hidden_act',
      /"swish2"/,
    ],
    [
      'a negative eps',
      { vision_config: { ...vc, layer_norm_eps: -1 } },
      'INVALID_CONFIG',
      'vision_config.layer_norm_eps',
      /layer_norm_eps must be a positive number, found -1/,
    ],
    [
      'vision_config not an object',
      { vision_config: [1] },
      'INVALID_CONFIG',
      'vision_config',
      /vision_config must be a JSON object, found \[1\]/,
    ],
    ['a bare config with a string size', { ...vc, hidden_size: '32' }, 'INVALID_CONFIG', 'vision_config.hidden_size', /found "32"/],
  ];
  for (const [what, json, code, field, msg] of bad) {
    it(`rejects ${what} with ${code}`, () => {
      const call = () => SiglipVisionConfig.fromHfConfig(json);
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

describe('buildSiglipVisionTower', () => {
  const config = SiglipVisionConfig.fromHfConfig(granite);

  it('float16 weights are cast in the graph: same result as float32 weights holding the same values (1e-5)', async () => {
    const specs = expectedSiglipVisionParameters(config);
    const { weights: half, float32 } = randomWeights(specs, 9, 'float16');
    const full = Weights.from(new Map(specs.map((p) => [p.name, tensorFromArray('float32', p.shape, float32.get(p.name)!)])));
    const pixels = randn(2 * 3 * 64 * 64, 10);
    const run = async (w: Weights) => {
      const s = await session(buildSiglipVisionTowerModel(w, config));
      const out = await s.run({ pixel_values: new ort.Tensor('float32', pixels, [2, 3, 64, 64]) });
      await s.release();
      return out.vision_hidden_states!.data as Float32Array;
    };
    expect(relMaxError(await run(half), await run(full))).toBeLessThan(1e-5);
  });

  it('rejects pixel values of the wrong shape with BAD_INPUT', () => {
    const { weights } = randomWeights(expectedSiglipVisionParameters(config), 9);
    const g = new Graph();
    const pixelValues = g.input('pv', 'float32', ['b', 3, 32, 32]);
    const call = () => buildSiglipVisionTower(g, weights, config, { pixelValues });
    expect(call).toThrow(VisionTowerError);
    expect(call).toThrow(/pixelValues must be float32\/float16 \[batch, 3, 64, 64\]/);
  });
});
