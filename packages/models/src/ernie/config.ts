import { ErnieConfigFields, type ErnieLayout } from '@vlmkit/config';
import { type ErnieTextConfig, ernieTextConfigFromFields } from '@vlmkit/moe-decoder';
import { type ErnieResamplerConfig, resamplerConfigFromFields } from '@vlmkit/resampler';
import { ErnieVisionConfig } from '@vlmkit/vision-tower';
import type { Reference } from '../model-load.js';
import { type ErnieTokens, ernieTokens } from './tokens.js';

/**
 * Where vLLM and HF transformers 5.17 differ, which one to follow:
 * - vision LayerNorm eps (vLLM: the top-level rms_norm_eps; HF: vision_config.rms_norm_eps),
 * - M-RoPE after a video with t' > max(h', w') (vLLM: max + 1; HF: start + max(h', w')).
 * Default 'vllm' (it follows Baidu's original code).
 */
export type ErnieReference = Reference;

export interface Ernie45VLConfig {
  /** The config.json layout, detected once: HF 5.17's (`text_config`) or Baidu's flat hub layout. */
  readonly layout: ErnieLayout;
  readonly vision: ErnieVisionConfig;
  readonly resampler: ErnieResamplerConfig;
  readonly text: ErnieTextConfig;
  readonly tokens: ErnieTokens;
  readonly reference: ErnieReference;
}

/**
 * The family's config normalizer. Reads config.json (HF 5.17 layout with text_config/vision_config, or the
 * hub's flat Baidu layout): the layout is detected once (`ErnieConfigFields`), the fields that several
 * components share (widths, merge sizes, eps) are read once by its readers, and each component's config is
 * derived from that one read. A bad field throws `ConfigError` (from @vlmkit/config) naming its path.
 */
export function ernie45VLConfig(
  json: Record<string, unknown>,
  reference: ErnieReference = 'vllm',
  /** The checkpoint's generation_config.json, when it has one: eos / pad as HF generate reads them. */
  generationConfig?: unknown,
): Ernie45VLConfig {
  const f = ErnieConfigFields.of(json);
  const text = ernieTextConfigFromFields(f);
  const tokens = ernieTokens(f, generationConfig);
  // Placeholders and delimiters are token ids the prompt holds: each must be in the vocabulary.
  const c = f.top;
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
    layout: f.layout,
    vision: ErnieVisionConfig.fromFields(f, { reference }),
    resampler: resamplerConfigFromFields(f),
    text,
    tokens,
    reference,
  };
}
