import { describe, expect, it } from 'vitest';
import { ConfigError, GraniteConfigFields } from './index.js';

describe('GraniteConfigFields', () => {
  it("vision type as HF reads it: no vision_config is SigLIP, one without model_type CLIP; sizes take that type's defaults", () => {
    const none = GraniteConfigFields.of({ text_config: { hidden_size: 8 } });
    expect([none.visionType, none.visionSizes]).toEqual(['siglip_vision_model', { hiddenSize: 768, imageSize: 224, patchSize: 16 }]);
    const clip = GraniteConfigFields.of({ vision_config: { image_size: [336, 336] } });
    expect([clip.visionType, clip.visionSizes]).toEqual(['clip_vision_model', { hiddenSize: 768, imageSize: 336, patchSize: 32 }]);
    expect(() => GraniteConfigFields.of({ vision_config: { model_type: 'vit' } }).visionType).toThrow(ConfigError);
  });

  it('each shared field is read once, its default applied once however many components ask', () => {
    const f = GraniteConfigFields.of({ text_config: { hidden_size: 8 }, vision_config: { model_type: 'siglip_vision_model' } });
    for (let i = 0; i < 3; i++) expect([f.textHiddenSize, f.visionSizes.hiddenSize, f.visionSizes.patchSize]).toEqual([8, 768, 16]);
    expect(f.top.defaultsApplied.map((d) => `${d.field} (${d.from})`)).toEqual([
      'vision_config.hidden_size (HF SiglipVisionConfig)',
      'vision_config.image_size (HF SiglipVisionConfig)',
      'vision_config.patch_size (HF SiglipVisionConfig)',
    ]);
  });

  it('a text config alone is its own text part', () => {
    const f = GraniteConfigFields.of({ hidden_size: 16 });
    expect([f.text === f.top, f.textHiddenSize, f.hasVisionConfig]).toEqual([true, 16, false]);
  });
});
