import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { qwen3VLConfig } from './config.js';
import { qwen3Vl2b, qwen3VlMoe30b } from './published-config.js';

describe('qwen3VLConfig', () => {
  it('reads the published 2B (dense, tied) and 30B-A3B (MoE, untied) configs, vision model_type as HF fixes it', () => {
    const dense = qwen3VLConfig(qwen3Vl2b);
    expect(dense).toMatchObject({
      modelType: 'qwen3_vl',
      vision: { depth: 24, hiddenSize: 1024, outHiddenSize: 2048, deepstackVisualIndexes: [5, 11, 17] },
      text: { numHiddenLayers: 28, headDim: 128, ropeTheta: 5000000, mropeSection: [24, 20, 20], tieWordEmbeddings: true, moe: undefined },
      tokens: { image: 151655, video: 151656, visionStart: 151652, visionEnd: 151653 },
    });
    const moe = qwen3VLConfig(qwen3VlMoe30b);
    expect(moe).toMatchObject({ modelType: 'qwen3_vl_moe', text: { moe: { numExperts: 128, topK: 8 }, tieWordEmbeddings: false } });
  });

  it('takes the token ids of HF Qwen3VLConfig when absent, and eos / pad from generation_config.json first', () => {
    const { image_token_id: _, video_token_id: __, ...json } = qwen3Vl2b;
    const c = qwen3VLConfig(json, { eos_token_id: [151645, 151643], pad_token_id: 151643 });
    expect(c.tokens).toMatchObject({ image: 151655, video: 151656, eos: [151645, 151643], pad: 151643 });
  });

  it('refuses a vision width that is not the decoder width, and a token id outside the vocabulary, naming the field', () => {
    const bad = (json: Record<string, unknown>) => () => qwen3VLConfig(json);
    const err = (json: Record<string, unknown>) => {
      try {
        qwen3VLConfig(json);
      } catch (e) {
        return e;
      }
      return undefined;
    };
    expect(bad({ ...qwen3Vl2b, vision_config: { ...qwen3Vl2b.vision_config, out_hidden_size: 1024 } })).toThrow(
      /vision_config\.out_hidden_size.*\(1024\) must equal text_config\.hidden_size \(2048\)/,
    );
    expect(err({ ...qwen3Vl2b, image_token_id: 151936 })).toBeInstanceOf(ConfigError);
    expect(bad({ ...qwen3Vl2b, model_type: 'qwen2_5_vl' })).toThrow(/model_type/);
    expect(
      bad({
        ...qwen3Vl2b,
        vision_config: { ...qwen3Vl2b.vision_config, deepstack_visual_indexes: [0, 1, 2, 3] },
        text_config: { ...qwen3Vl2b.text_config, num_hidden_layers: 3 },
      }),
    ).toThrow(/deepstack_visual_indexes.*4 levels.*3 layers/);
  });
});
