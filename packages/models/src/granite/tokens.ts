import { GraniteConfigFields } from '@vlmkit/config';
import { type GenerationTokens, generationTokens } from '../generation-tokens.js';

/** The token ids a Granite 4 Vision prompt is read and generated with. */
export interface GraniteTokens extends GenerationTokens {
  /** Image placeholder: HF `image_token_index` (`image_token_id` accepted too). */
  image: number;
}

/** Reads the token ids from config.json; eos / pad as for every model (`generationTokens`, generation_config.json first). */
export function graniteTokens(json: Record<string, unknown> | GraniteConfigFields, generationConfig?: unknown): GraniteTokens {
  const f = json instanceof GraniteConfigFields ? json : GraniteConfigFields.of(json);
  const c = f.top;
  if (!c.has('image_token_index') && !c.has('image_token_id')) {
    // HF Granite4VisionConfig's default (32000, LLaVA's) is not Granite's: required.
    c.fail('MISSING_CONFIG_FIELD', 'image_token_index', 'is missing, and so is image_token_id; expected the image placeholder token id.');
  }
  const generation = generationTokens(c.json, generationConfig);
  // HF Granite4VisionTextConfig defaults eos_token_id to 2, and GenerationConfig.from_model_config takes it from
  // the text config when there is no generation_config.json.
  const text = f.text === c ? undefined : f.text;
  const noEos = generationConfig === undefined && text !== undefined && !text.has('eos_token_id') && !c.has('eos_token_id');
  return {
    image: c.has('image_token_index') ? c.int('image_token_index', { min: 0 }) : c.int('image_token_id', { min: 0 }),
    ...generation,
    ...(noEos ? { eos: [2], pad: text.has('pad_token_id') || c.has('pad_token_id') ? generation.pad : 2 } : {}),
  };
}
