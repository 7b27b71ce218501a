import { ErnieConfigFields } from '@vlmkit/config';
import { type GenerationTokens, generationTokens } from '../generation-tokens.js';

/** The token ids an ERNIE-4.5-VL prompt is read with. */
export interface ErnieTokens extends GenerationTokens {
  /** Image patch placeholder (`image_token_id` in HF 5.17 configs, `im_patch_id` on the hub). */
  image: number;
  /** Video patch placeholder: HF's `video_token_id`; the hub layout (vLLM) reuses `im_patch_id`. */
  video: number;
  imageStart: number | undefined;
  imageEnd: number | undefined;
  videoStart: number | undefined;
  videoEnd: number | undefined;
}

/**
 * Reads the token ids from either config layout: HF 5.17 (`text_config`, `image_token_id`) or the hub's
 * (`im_patch_id`); eos / pad as for every model (`generationTokens`, generation_config.json first).
 */
export function ernieTokens(config: Record<string, unknown> | ErnieConfigFields, generationConfig?: unknown): ErnieTokens {
  const f = config instanceof ErnieConfigFields ? config : ErnieConfigFields.of(config);
  const c = f.top;
  if (!c.has('image_token_id') && !c.has('im_patch_id')) {
    c.fail(
      'MISSING_CONFIG_FIELD',
      'image_token_id',
      'is missing (HF layout), and so is im_patch_id (hub layout): cannot find image placeholders.',
    );
  }
  const image = c.optionalInt('image_token_id', { min: 0 }) ?? c.int('im_patch_id', { min: 0 });
  // HF layout (text_config): a missing id takes HF Ernie4_5_VLMoeConfig's default, as transformers reads it.
  // Hub layout: vLLM has no defaults; a missing delimiter is none, and videos reuse im_patch_id.
  const hf = f.layout === 'hf';
  const id = (key: string, fallback: number) =>
    hf ? c.int(key, { min: 0, default: fallback, from: 'HF Ernie4_5_VLMoeConfig' }) : c.optionalInt(key, { min: 0 });
  return {
    image,
    video: id('video_token_id', 103367) ?? image,
    imageStart: id('image_start_token_id', 101304),
    imageEnd: id('image_end_token_id', 101305),
    videoStart: id('video_start_token_id', 101306),
    videoEnd: id('video_end_token_id', 101307),
    ...generationTokens(c.json, generationConfig),
  };
}

/**
 * 1 where a token goes to the vision experts: patch placeholders and the
 * image/video start/end delimiters (vLLM `visual_token_mask`, HF
 * `moe_mm_token_type_ids`), 0 elsewhere.
 */
export function visionExpertMask(ids: ArrayLike<number>, t: ErnieTokens): Uint8Array {
  const visual = new Set(
    [t.image, t.video, t.imageStart, t.imageEnd, t.videoStart, t.videoEnd].filter((v): v is number => v !== undefined),
  );
  return Uint8Array.from({ length: ids.length }, (_, i) => (visual.has(ids[i]!) ? 1 : 0));
}
