import { type ConfigObject, fields } from './fields.js';

/** The vision sub-configs a Granite 4 Vision config.json may hold (HF `vision_config.model_type`). */
export type VisionModelType = 'siglip_vision_model' | 'clip_vision_model';

/** A vision tower's sizes that its projector needs too. */
export interface VisionSizes {
  /** Dv: `hidden_size`. */
  readonly hiddenSize: number;
  /** Square input side in pixels: `image_size` (an int or [n, n]). */
  readonly imageSize: number;
  /** `patch_size` (an int or [n, n]). */
  readonly patchSize: number;
}

/** HF 5.17 defaults of those sizes by vision model type (configuration_siglip.py, configuration_clip.py). */
export const VISION_SIZE_DEFAULTS: Readonly<Record<VisionModelType, VisionSizes & { readonly from: string }>> = {
  siglip_vision_model: { hiddenSize: 768, imageSize: 224, patchSize: 16, from: 'HF SiglipVisionConfig' },
  clip_vision_model: { hiddenSize: 768, imageSize: 224, patchSize: 32, from: 'HF CLIPVisionConfig' },
};

/** Reads a vision sub-config's sizes, absent ones taking `type`'s HF defaults. */
export function readVisionSizes(vision: ConfigObject, type: VisionModelType): VisionSizes {
  const d = VISION_SIZE_DEFAULTS[type];
  return {
    hiddenSize: vision.int('hidden_size', { default: d.hiddenSize, from: d.from }),
    imageSize: vision.square('image_size', { default: d.imageSize, from: d.from }),
    patchSize: vision.square('patch_size', { default: d.patchSize, from: d.from }),
  };
}

/**
 * A Granite 4 Vision config.json read once: the fields that the SigLIP tower,
 * the window Q-Former projector and the decoder share, each read by one
 * reader the first time it is asked for.
 */
export class GraniteConfigFields {
  readonly #cache = new Map<string, unknown>();

  private constructor(
    /** The whole file. */
    readonly top: ConfigObject,
    /** The decoder's fields: `text_config`, or the file itself when it is a text config alone. */
    readonly text: ConfigObject,
    /** `vision_config`, or an empty one (named `vision_config.*` in errors) when absent. */
    readonly vision: ConfigObject,
    /** Whether the file has a `vision_config`. */
    readonly hasVisionConfig: boolean,
  ) {}

  static of(json: unknown, config = 'Granite 4 Vision config'): GraniteConfigFields {
    const top = fields(json, config);
    const vision = top.optionalObj('vision_config');
    return new GraniteConfigFields(
      top,
      top.optionalObj('text_config') ?? top,
      vision ?? fields({}, config, 'vision_config'),
      vision !== undefined,
    );
  }

  #once<T>(key: string, read: () => T): T {
    if (!this.#cache.has(key)) this.#cache.set(key, read());
    return this.#cache.get(key) as T;
  }

  /**
   * The vision tower's type. HF Granite4VisionConfig.__post_init__: no
   * vision_config is a default SiglipVisionConfig; a vision_config without
   * model_type is a CLIP one. Other types are not built (UNSUPPORTED_CONFIG).
   */
  get visionType(): VisionModelType {
    return this.#once('visionType', () =>
      this.hasVisionConfig
        ? this.vision.oneOf('model_type', ['siglip_vision_model', 'clip_vision_model'], {
            default: 'clip_vision_model',
            from: 'HF Granite4VisionConfig.__post_init__',
            code: 'UNSUPPORTED_CONFIG',
          })
        : 'siglip_vision_model',
    );
  }

  /** The tower's width, input side and patch size: the tower's and the projector's (Dv, image_size / patch_size). */
  get visionSizes(): VisionSizes {
    return this.#once('visionSizes', () => readVisionSizes(this.vision, this.visionType));
  }

  /** D: `text_config.hidden_size`, the decoder's width and the projector's output. No default (HF's is llama's). */
  get textHiddenSize(): number {
    return this.#once('textHiddenSize', () => this.text.int('hidden_size'));
  }
}
