import { expect, it } from 'vitest';
// The README's example, with its comments turned into assertions.
import { ConfigError, fields, Grid, GridError } from './index.js';

it('README example runs and gives the documented values', () => {
  const json = { text_config: { hidden_size: 2560, moe_k: 0, rms_norm_eps: null } };
  const text = fields(json, 'ERNIE text config').obj('text_config');

  expect(text.int('hidden_size')).toBe(2560);
  expect(text.positive('rms_norm_eps', { default: 1e-5, from: 'HF Ernie4_5_VLMoeTextConfig' })).toBe(1e-5);
  expect(text.defaultsApplied).toEqual([{ field: 'text_config.rms_norm_eps', value: 1e-5, from: 'HF Ernie4_5_VLMoeTextConfig' }]);

  let err: ConfigError | undefined;
  try {
    text.int('moe_k', { default: 6, from: 'HF Ernie4_5_VLMoeTextConfig' });
  } catch (e) {
    err = e as ConfigError;
  }
  expect(err).toBeInstanceOf(ConfigError);
  expect(err?.code).toBe('INVALID_CONFIG');
  expect(err?.field).toBe('text_config.moe_k');
  expect(err?.message).toBe('ERNIE text config: text_config.moe_k must be a positive integer, found 0.');
});

it('README Grid example gives the documented values', () => {
  const video = Grid.of([4, 16, 16], 'video_grid_thw[0]', { spatial: 2, temporal: 2 });
  expect([video.patches, video.tokens, video.merged]).toEqual([1024, 128, [2, 8, 8]]);
  expect(() => Grid.of([1, 3, 4], 'image_grid_thw[1]', { spatial: 2 })).toThrow(
    new GridError('image_grid_thw[1]', 'image_grid_thw[1] is [1, 3, 4]: expected h and w multiples of spatial_merge_size (2)'),
  );
});
