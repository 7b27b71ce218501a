import { ModelError } from '../errors.js';
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

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) ? v : undefined;
}

/** Reads the token ids from either config layout: HF 5.17 (`text_config`, `image_token_id`) or the hub's (`im_patch_id`). */
export function ernieTokens(config: Record<string, unknown>): ErnieTokens {
  const image = num(config.image_token_id) ?? num(config.im_patch_id);
  if (image === undefined) {
    throw new ModelError(
      'BAD_CONFIG',
      'config.json has neither image_token_id (HF layout) nor im_patch_id (hub layout): cannot find image placeholders',
    );
  }
  return {
    image,
    video: num(config.video_token_id) ?? image,
    imageStart: num(config.image_start_token_id),
    imageEnd: num(config.image_end_token_id),
    videoStart: num(config.video_start_token_id),
    videoEnd: num(config.video_end_token_id),
    ...generationTokens(config),
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
