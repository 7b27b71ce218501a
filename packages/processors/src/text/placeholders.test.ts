import { describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import {
  ernieImageTokenCount,
  ernieVideoTokenCount,
  expandPlaceholders,
  graniteImageTokenCount,
  mmTokenTypeIds,
  moeMmTokenTypeIds,
} from './placeholders.js';

describe('expandPlaceholders', () => {
  it('gives the n-th placeholder of each modality the n-th count, scanning left to right', () => {
    const text = 'a<I>b<V>c<I>d';
    expect(
      expandPlaceholders(text, [
        { modality: 'image', token: '<I>', counts: [2, 3] },
        { modality: 'video', token: '<V>', counts: [1] },
      ]),
    ).toBe('a<I><I>b<V>c<I><I><I>d');
  });

  it('leaves a modality without items alone, as HF', () => {
    expect(expandPlaceholders('<I><V>', [{ modality: 'video', token: '<V>', counts: [2] }])).toBe('<I><V><V>');
    expect(expandPlaceholders('<I>', [{ modality: 'image', token: '<I>', counts: [] }])).toBe('<I>');
  });

  it('refuses more or fewer placeholders than items, naming the modality', () => {
    const image = (counts: number[]) => [{ modality: 'image', token: '<I>', counts }];
    expect(() => expandPlaceholders('<I><I>', image([1]))).toThrow(/more image placeholders/);
    expect(() => expandPlaceholders('<I>', image([1, 1]))).toThrow(/2 images given but the prompt has 1/);
    expect(() => expandPlaceholders('x', image([1]))).toThrow(ProcessorError);
  });
});

describe('token counts', () => {
  it('ERNIE: grid product over merge^2 (images), also over temporal_patch_size (videos)', () => {
    expect(ernieImageTokenCount([1, 28, 44], 2)).toBe(308);
    expect(ernieVideoTokenCount([4, 16, 16], 2, 2)).toBe(128);
  });

  // Each count also checked with HF Granite4VisionProcessor._get_number_of_features (transformers 5.17).
  it('Granite: base tile + unpadded grid + one newline per row, minus CLS for "default"', () => {
    const cfg = { patchSize: 16, visionFeatureSelectStrategy: 'full', downsampleRate: '1/4' };
    // 384 tiles -> 24 patches -> 6 per side after 1/4. A 900x40 (w x h) image fit into [384, 768]: 1x2 tiles,
    // grid 6 x 12; aspect 22.5 > 2 -> new_h = int(round(40 * 12 / 900, 7)) = 0, padding 3 -> no rows: 0 + 0 + 36.
    expect(graniteImageTokenCount([40, 900], [384, 768], [384, 384], cfg)).toBe(36);
    // A 300x200 (h x w) image fit into [768, 384]: 2x1 tiles, grid 12 x 6; aspect 0.667 > 0.5 ->
    // new_h = int(round(300 * 6 / 200, 7)) = 9, padding (12 - 9) // 2 = 1 -> 10 rows: 10 * 6 + 10 + 36 = 106.
    expect(graniteImageTokenCount([300, 200], [768, 384], [384, 384], cfg)).toBe(106);
    expect(graniteImageTokenCount([300, 200], [768, 384], [384, 384], { ...cfg, visionFeatureSelectStrategy: 'default' })).toBe(105);
    // No downsampling, a CLS token added per image.
    expect(
      graniteImageTokenCount([384, 384], [384, 384], [384, 384], {
        patchSize: 16,
        visionFeatureSelectStrategy: 'full',
        numAdditionalImageTokens: 1,
      }),
    ).toBe(24 * 24 + 24 + 24 * 24 + 1);
  });

  it('rejects a downsample_rate that is not a fraction', () => {
    expect(() =>
      graniteImageTokenCount([1, 1], [1, 1], [1, 1], { patchSize: 1, visionFeatureSelectStrategy: 'full', downsampleRate: 'x' }),
    ).toThrow(ProcessorError);
  });
});

describe('token type ids', () => {
  const ids = [5, 9, 10, 10, 11, 5, 12, 20, 20, 13, 7];
  const tokens = { imageStart: 9, image: 10, imageEnd: 11, videoStart: 12, video: 20, videoEnd: 13 };

  it('mm_token_type_ids marks placeholders only: 1 image, 2 video', () => {
    expect(Array.from(mmTokenTypeIds(ids, { image: 10, video: 20 }), Number)).toEqual([0, 0, 1, 1, 0, 0, 0, 2, 2, 0, 0]);
  });

  it('moe_mm_token_type_ids also marks the start/end tokens around them', () => {
    expect(Array.from(moeMmTokenTypeIds(BigInt64Array.from(ids, BigInt), tokens), Number)).toEqual([0, 1, 1, 1, 1, 0, 2, 2, 2, 2, 0]);
  });
});
