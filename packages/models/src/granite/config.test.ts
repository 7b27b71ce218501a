import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { FIXTURES } from '../test-utils/fixtures.js';
import { granite4VisionConfig } from './config.js';

const tiny = () => JSON.parse(readFileSync(join(FIXTURES, 'granite-tiny', 'config.json'), 'utf8')) as Record<string, unknown>;

/** `CODE field` of the ConfigError `read` throws (another error, or none, fails the test). */
function codeOf(read: () => unknown): string {
  try {
    read();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return `${(e as ConfigError).code} ${(e as ConfigError).field}`;
  }
  return 'no error';
}

describe('granite4VisionConfig', () => {
  it('reads granite-tiny: the levels from moe-decoder (kind, projector, vision layer), the text config, HF defaults', () => {
    const c = granite4VisionConfig(tiny());
    expect(c.levels.map((l) => [l.k, l.kind, l.projector, l.visionLayer, l.llmLayer])).toEqual([
      [0, 'layerwise', 0, -1, 0],
      [1, 'layerwise', 1, -2, 1],
      [2, 'layerwise', 2, -3, 2],
      [3, 'layerwise', 3, 1, 3],
      [4, 'spatial', 0, -2, 4],
      [5, 'spatial', 1, -2, 5],
      [6, 'spatial', 2, -2, 6],
      [7, 'spatial', 3, -2, 7],
    ]);
    expect(c.text.numHiddenLayers).toBe(8);
    expect([c.selectStrategy, c.imageNewline, c.imageTokenId]).toEqual(['full', true, 255]);
    expect(c.pinpoints[0]).toEqual([64, 128]);
    const bare = tiny();
    delete bare.vision_feature_select_strategy;
    expect(granite4VisionConfig(bare).selectStrategy).toBe('default'); // HF Granite4VisionConfig's default
  });

  it('refuses bad fields with ConfigError naming them', () => {
    expect(codeOf(() => granite4VisionConfig({ ...tiny(), image_grid_pinpoints: undefined }))).toBe(
      'MISSING_CONFIG_FIELD image_grid_pinpoints',
    );
    expect(codeOf(() => granite4VisionConfig({ ...tiny(), image_grid_pinpoints: [[64, 0]] }))).toBe('INVALID_CONFIG image_grid_pinpoints');
    expect(codeOf(() => granite4VisionConfig({ ...tiny(), vision_feature_select_strategy: 'cls' }))).toBe(
      'INVALID_CONFIG vision_feature_select_strategy',
    );
    expect(codeOf(() => granite4VisionConfig({ ...tiny(), use_image_newline_parameter: 1 }))).toBe(
      'INVALID_CONFIG use_image_newline_parameter',
    );
    expect(
      codeOf(() =>
        granite4VisionConfig({
          ...tiny(),
          deepstack_layer_map: [
            [-1, 0],
            [-2, 1, 2],
          ],
        }),
      ),
    ).toBe('INVALID_CONFIG deepstack_layer_map');
    // The 8-layer decoder has no layer 8; two levels on one layer are refused too.
    expect(codeOf(() => granite4VisionConfig({ ...tiny(), spatial_target_layers: [4, 5, 6, 8] }))).toBe(
      'INCONSISTENT_CONFIG spatial_target_layers[3]',
    );
    expect(codeOf(() => granite4VisionConfig({ ...tiny(), spatial_target_layers: [4, 5, 6, 0] }))).toBe(
      'INCONSISTENT_CONFIG spatial_target_layers[3]',
    );
  });

  it('without vision_config the tower and the projector read the same SigLIP defaults (HF: SiglipVisionConfig())', () => {
    const { vision_config: _v, qformer_config: _q, ...json } = tiny();
    const c = granite4VisionConfig({ ...json, downsample_rate: '1/2' });
    expect([c.vision.hiddenSize, c.vision.imageSize, c.vision.patchSize]).toEqual([768, 224, 16]);
    expect([c.projector.visionHiddenSize, c.projector.imageSide]).toEqual([768, 224 / 16]);
  });

  it('a vision_config without model_type is CLIP (HF), which Granite does not build: refused naming the field', () => {
    const json = tiny();
    delete (json['vision_config'] as Record<string, unknown>)['model_type'];
    expect(codeOf(() => granite4VisionConfig(json))).toBe('UNSUPPORTED_CONFIG vision_config.model_type');
  });
});
