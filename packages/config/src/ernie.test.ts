import { describe, expect, it } from 'vitest';
import { ErnieConfigFields } from './index.js';
import { errorOf } from './test-utils/error-of.js';

describe('ErnieConfigFields', () => {
  it('detects the layout once: text_config is HF, a flat file Baidu', () => {
    const hf = ErnieConfigFields.of({ text_config: { hidden_size: 8 }, vision_config: { hidden_size: 4 } });
    expect([hf.layout, hf.text.path, hf.vision?.path, hf.textHiddenSize, hf.visionHiddenSize]).toEqual([
      'hf',
      'text_config',
      'vision_config',
      8,
      4,
    ]);
    const baidu = ErnieConfigFields.of({ hidden_size: 8, pixel_hidden_size: 4, vision_config: { embed_dim: 4 } });
    expect([baidu.layout, baidu.text.path, baidu.textHiddenSize, baidu.visionHiddenSize]).toEqual(['baidu', '', 8, 4]);
  });

  it('each shared field is read by one reader, its default applied once however many components ask', () => {
    const f = ErnieConfigFields.of({ text_config: { hidden_size: 8 }, vision_config: { hidden_size: 4 } });
    for (let i = 0; i < 3; i++) {
      expect([f.spatialMergeSize, f.temporalMergeSize, f.textRmsNormEps, f.visionRmsNormEps, f.vllmVisionBlockEps]).toEqual([
        2, 2, 1e-5, 1e-6, 1e-6,
      ]);
    }
    expect(f.top.defaultsApplied.map((d) => `${d.field}=${String(d.value)} (${d.from})`)).toEqual([
      'vision_config.spatial_merge_size=2 (HF Ernie4_5_VLMoeVisionConfig)',
      'vision_config.temporal_merge_size=2 (HF Ernie4_5_VLMoeVisionConfig)',
      'text_config.rms_norm_eps=0.00001 (HF Ernie4_5_VLMoeTextConfig)',
      'vision_config.rms_norm_eps=0.000001 (HF Ernie4_5_VLMoeVisionConfig)',
      'rms_norm_eps=0.000001 (vLLM getattr(config, "rms_norm_eps", 1e-6))',
    ]);
  });

  it("Baidu: the top-level rms_norm_eps is the text model's, also vLLM's vision block eps; merge sizes from *_conv_size", () => {
    const f = ErnieConfigFields.of({ rms_norm_eps: 0.25, spatial_conv_size: 2, temporal_conv_size: 2, vision_config: {} });
    expect([f.textRmsNormEps, f.vllmVisionBlockEps, f.spatialMergeSize, f.temporalMergeSize]).toEqual([0.25, 0.25, 2, 2]);
  });

  it('refuses widths and merge sizes that two components would read differently', () => {
    const widths = errorOf(() => ErnieConfigFields.of({ pixel_hidden_size: 8, vision_config: { hidden_size: 4 } }).visionHiddenSize);
    expect([widths.code, widths.field]).toEqual(['INCONSISTENT_CONFIG', 'pixel_hidden_size']);
    const embed = errorOf(() => ErnieConfigFields.of({ vision_config: { hidden_size: 4, embed_dim: 8 } }).visionHiddenSize);
    expect([embed.code, embed.field]).toEqual(['INCONSISTENT_CONFIG', 'vision_config.embed_dim']);
    const merge = errorOf(() => ErnieConfigFields.of({ spatial_conv_size: 2, vision_config: { spatial_merge_size: 3 } }).spatialMergeSize);
    expect([merge.code, merge.field]).toEqual(['INCONSISTENT_CONFIG', 'spatial_conv_size']);
  });

  it('a bare vision_config names its fields vision_config.* and has no top-level eps', () => {
    const f = ErnieConfigFields.bareVision({ depth: 2, hidden_size: 4, rms_norm_eps: 0.5 }, 'test config');
    expect([f.visionHiddenSize, f.vllmVisionBlockEps, f.visionRmsNormEps]).toEqual([4, 1e-6, 0.5]);
    expect(errorOf(() => ErnieConfigFields.bareVision({ depth: 2 }, 'test config').visionHiddenSize).field).toBe(
      'vision_config.hidden_size',
    );
  });
});
