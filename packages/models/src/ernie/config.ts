import { fields } from '@vlmkit/config';
import { type ErnieTextConfig, ernieTextConfigFromHf } from '@vlmkit/moe-decoder';
import { type ErnieResamplerConfig, fromHfConfig as resamplerFromHf } from '@vlmkit/resampler';
import { ErnieVisionConfig } from '@vlmkit/vision-tower';
import { type ErnieTokens, ernieTokens } from './tokens.js';

/**
 * Where vLLM and HF transformers 5.17 differ, which one to follow:
 * - vision LayerNorm eps (vLLM: the top-level rms_norm_eps; HF: vision_config.rms_norm_eps),
 * - M-RoPE after a video with t' > max(h', w') (vLLM: max + 1; HF: start + max(h', w')).
 * Default 'vllm' (it follows Baidu's original code).
 */
export type ErnieReference = 'vllm' | 'hf';

export interface Ernie45VLConfig {
  readonly vision: ErnieVisionConfig;
  readonly resampler: ErnieResamplerConfig;
  readonly text: ErnieTextConfig;
  readonly tokens: ErnieTokens;
  readonly reference: ErnieReference;
}

/**
 * Reads config.json (HF 5.17 layout with text_config/vision_config, or the hub's flat Baidu layout):
 * each component's part through its own reader, so a bad field throws `ConfigError` (from
 * @vlmkit/config) naming its path.
 */
export function ernie45VLConfig(
  json: Record<string, unknown>,
  reference: ErnieReference = 'vllm',
  /** The checkpoint's generation_config.json, when it has one: eos / pad as HF generate reads them. */
  generationConfig?: unknown,
): Ernie45VLConfig {
  const text = ernieTextConfigFromHf(json);
  const tokens = ernieTokens(json, generationConfig);
  // Placeholders and delimiters are token ids the prompt holds: each must be in the vocabulary.
  const c = fields(json, 'ERNIE-4.5-VL config');
  for (const [key, id] of [
    [c.has('image_token_id') ? 'image_token_id' : 'im_patch_id', tokens.image],
    ['video_token_id', tokens.video],
    ['image_start_token_id', tokens.imageStart],
    ['image_end_token_id', tokens.imageEnd],
    ['video_start_token_id', tokens.videoStart],
    ['video_end_token_id', tokens.videoEnd],
  ] as const) {
    if (id !== undefined && id >= text.vocabSize) {
      const given = c.has(key) ? '' : ", HF's default: the field is missing";
      c.fail('INCONSISTENT_CONFIG', key, `(${id}${given}) must be below text_config.vocab_size (${text.vocabSize}): it is a token id.`);
    }
  }
  return {
    vision: ErnieVisionConfig.fromHfConfig(json, { reference }),
    resampler: resamplerFromHf(json),
    text,
    tokens,
    reference,
  };
}
