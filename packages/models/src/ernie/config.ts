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
  return {
    vision: ErnieVisionConfig.fromHfConfig(json, { reference }),
    resampler: resamplerFromHf(json),
    text: ernieTextConfigFromHf(json),
    tokens: ernieTokens(json, generationConfig),
    reference,
  };
}
