import { describe, expect, it } from 'vitest';
import { expectedParameters, qformerExpectedParameters } from './parameters.js';
import { qformerFromHfConfig } from './qformer-config.js';
import { QFORMER_CASES, readJson, shapesUnder } from './test-utils/fixtures.js';
import { fromHfConfig } from './window-config.js';

const sorted = (specs: { name: string; shape: readonly number[] }[]) =>
  specs.map((s) => ({ name: s.name, shape: [...s.shape] })).sort((a, b) => (a.name < b.name ? -1 : 1));

describe("expected parameters = the HF modules' state_dict (test-fixtures/qformer)", () => {
  it('qformerExpectedParameters: Blip2QFormerModel, 3 layers with cross-attention on 0 and 2', async () => {
    const dir = `${QFORMER_CASES}qformer/`;
    const config = qformerFromHfConfig(readJson(`${dir}config.json`));
    expect(sorted(qformerExpectedParameters(config))).toEqual(await shapesUnder(`${dir}model.safetensors`, ''));
    const names = qformerExpectedParameters(config).map((s) => s.name);
    expect(names.filter((n) => n.includes('crossattention.attention.key.weight'))).toEqual([
      'encoder.layer.0.crossattention.attention.key.weight',
      'encoder.layer.2.crossattention.attention.key.weight',
    ]);
  });

  for (const name of ['window-2-4', 'window-4-8', 'area-2-3']) {
    it(`expectedParameters: Granite4VisionWindowQFormerDownsampler (${name})`, async () => {
      const dir = `${QFORMER_CASES}${name}/`;
      const config = fromHfConfig(readJson(`${dir}config.json`));
      expect(sorted(expectedParameters(config))).toEqual(await shapesUnder(`${dir}model.safetensors`, 'layerwise_projectors.0.'));
    });
  }

  it('the real granite-4.0-3b-vision projector: query [1, 16, 1152], image_positions [1, 64, 1152], out_linear [2560, 1152]', () => {
    const config = fromHfConfig({
      downsample_rate: '4/8',
      vision_config: { model_type: 'siglip_vision_model', hidden_size: 1152, image_size: 384, patch_size: 16 },
      text_config: { hidden_size: 2560 },
    });
    const byName = new Map(expectedParameters(config).map((s) => [s.name, s.shape]));
    expect(byName.get('query')).toEqual([1, 16, 1152]);
    expect(byName.get('image_positions')).toEqual([1, 64, 1152]);
    expect(byName.get('out_linear.weight')).toEqual([2560, 1152]);
    expect(byName.get('qformer.encoder.layer.0.intermediate_query.dense.weight')).toEqual([3072, 1152]);
    // norm 2, query, image_positions, out_linear 2; Q-Former layernorm 2 + one layer: attention 10, crossattention 10, intermediate_query 2, output_query 4
    expect(byName.size).toBe(6 + 2 + 26);
  });
});
