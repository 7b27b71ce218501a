import { fields } from '@vlmkit/config';
import { type GenerationTokens, generationTokens } from '../generation-tokens.js';

/** The token ids a Granite 4 Vision prompt is read and generated with. */
export interface GraniteTokens extends GenerationTokens {
  /** Image placeholder: HF `image_token_index` (`image_token_id` accepted too). */
  image: number;
}

/** Reads the token ids from config.json; eos / pad as for every model (`generationTokens`, generation_config.json first). */
export function graniteTokens(json: Record<string, unknown>, generationConfig?: unknown): GraniteTokens {
  const c = fields(json, 'Granite 4 Vision config');
  return {
    // HF Granite4VisionConfig's default (32000, LLaVA's) is not Granite's: required.
    image: c.has('image_token_index') ? c.int('image_token_index', { min: 0 }) : c.int('image_token_id', { min: 0 }),
    ...generationTokens(json, generationConfig),
  };
}
