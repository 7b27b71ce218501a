import { type ConfigObject, fields } from './fields.js';

/**
 * Which config.json layout an ERNIE-4.5-VL checkpoint has: HF transformers
 * 5.17's (`text_config` + `vision_config`) or Baidu's original on the hub
 * (text fields at the top level, `pixel_hidden_size`, `spatial_conv_size`,
 * `vision_config` with `embed_dim`), which vLLM reads.
 */
export type ErnieLayout = 'hf' | 'baidu';

/** Where the defaults below come from. */
export const ERNIE_DEFAULT_SOURCES = {
  text: 'HF Ernie4_5_VLMoeTextConfig',
  vision: 'HF Ernie4_5_VLMoeVisionConfig',
  baidu: "Baidu Ernie4_5_VLMoEConfig (the hub's configuration_ernie_45t_vl.py)",
  vllmEps: 'vLLM getattr(config, "rms_norm_eps", 1e-6)',
} as const;
const FROM = ERNIE_DEFAULT_SOURCES;

/**
 * An ERNIE-4.5-VL config.json with its layout detected once, and the fields
 * that more than one component reads (vision tower, resampler, text decoder),
 * each read by one reader with one default, the first time it is asked for.
 * Components read their own fields from `text`, `vision` and `top`.
 */
export class ErnieConfigFields {
  readonly #cache = new Map<string, unknown>();

  private constructor(
    readonly layout: ErnieLayout,
    /** The whole file. */
    readonly top: ConfigObject,
    /** The text decoder's fields: `text_config` (HF) or the top level (Baidu, or a text config alone). */
    readonly text: ConfigObject,
    /** `vision_config`, or the file itself when it is a bare vision config; undefined when absent. */
    readonly vision: ConfigObject | undefined,
    /** The file is a bare vision_config (no top level of its own). */
    readonly bareVision: boolean,
  ) {}

  /** Reads `json` as an ERNIE-4.5-VL config: HF layout when it has `text_config`, Baidu's otherwise. */
  static of(json: unknown, config = 'ERNIE-4.5-VL config'): ErnieConfigFields {
    const top = fields(json, config);
    if (top.has('text_config')) return new ErnieConfigFields('hf', top, top.obj('text_config'), top.optionalObj('vision_config'), false);
    return new ErnieConfigFields('baidu', top, top, top.optionalObj('vision_config'), false);
  }

  /** A bare vision_config object (fields named `vision_config.*` in errors). */
  static bareVision(json: unknown, config: string): ErnieConfigFields {
    const top = fields(json, config);
    return new ErnieConfigFields('baidu', top, top, fields(json, config, 'vision_config'), true);
  }

  #once<T>(key: string, read: () => T): T {
    if (!this.#cache.has(key)) this.#cache.set(key, read());
    return this.#cache.get(key) as T;
  }

  /** D, the text model's width (`text_config.hidden_size`; Baidu's top-level `hidden_size`): the decoder's and the resampler's output. */
  get textHiddenSize(): number {
    return this.#once('textHiddenSize', () => this.text.int('hidden_size'));
  }

  /**
   * Dv, the vision tower's width: `vision_config.hidden_size` (HF) or `embed_dim`
   * (Baidu; both must agree, vLLM asserts it), and Baidu's `pixel_hidden_size`,
   * the resampler's input width, which must equal it. No default: HF's 1280 is the 28B's.
   */
  get visionHiddenSize(): number {
    return this.#once('visionHiddenSize', () => {
      const v = this.vision;
      const hidden = v?.optionalInt('hidden_size');
      const embed = v?.optionalInt('embed_dim');
      if (v !== undefined && hidden !== undefined && embed !== undefined && hidden !== embed) {
        v.fail('INCONSISTENT_CONFIG', 'embed_dim', `${embed} and hidden_size ${hidden} must be equal (vLLM asserts it).`);
      }
      const tower = embed ?? hidden;
      if (this.layout === 'baidu' && !this.bareVision && this.top.has('pixel_hidden_size')) {
        const pixel = this.top.int('pixel_hidden_size');
        if (tower !== undefined && tower !== pixel) {
          this.top.fail(
            'INCONSISTENT_CONFIG',
            'pixel_hidden_size',
            `${pixel} differs from vision_config.hidden_size ${tower}; the resampler's input is the tower's output.`,
          );
        }
        return pixel;
      }
      if (tower !== undefined) return tower;
      if (v === undefined) {
        if (this.layout === 'hf') {
          this.top.fail('MISSING_CONFIG_FIELD', 'vision_config', 'is missing; the HF layout has text_config and vision_config.');
        }
        this.top.fail('MISSING_CONFIG_FIELD', 'pixel_hidden_size', 'is missing, and so is vision_config.hidden_size.');
      }
      return v.fail(
        'MISSING_CONFIG_FIELD',
        'hidden_size',
        'is missing; expected hidden_size (HF layout) or embed_dim (Baidu layout), found neither.',
      );
    });
  }

  /**
   * s: s x s patches merge into one token, in the tower's windows and the
   * resampler alike. HF: `vision_config.spatial_merge_size`. Baidu: the
   * resampler reads `spatial_conv_size`, the tower `vision_config.spatial_merge_size`:
   * one value, so they must agree.
   */
  get spatialMergeSize(): number {
    return this.#once('spatialMergeSize', () => {
      const v = this.vision;
      const conv = this.layout === 'baidu' && !this.bareVision ? this.top.optionalInt('spatial_conv_size') : undefined;
      if (conv === undefined) {
        if (v !== undefined) return v.int('spatial_merge_size', { default: 2, from: FROM.vision });
        return this.top.int('spatial_conv_size', { default: 2, from: FROM.baidu });
      }
      const merge = v?.optionalInt('spatial_merge_size');
      if (merge !== undefined && merge !== conv) {
        this.top.fail(
          'INCONSISTENT_CONFIG',
          'spatial_conv_size',
          `(${conv}) differs from vision_config.spatial_merge_size (${merge}): the resampler merges the tower's s x s windows, so they must be equal.`,
        );
      }
      return conv;
    });
  }

  /** Frames merged into one token: HF `vision_config.temporal_merge_size`, Baidu `temporal_conv_size`. */
  get temporalMergeSize(): number {
    return this.#once('temporalMergeSize', () =>
      this.layout === 'hf'
        ? (this.vision ?? this.top).int('temporal_merge_size', { default: 2, from: FROM.vision })
        : this.top.int('temporal_conv_size', { default: 2, from: FROM.baidu }),
    );
  }

  /**
   * The text model's RMSNorm eps (`text_config.rms_norm_eps`; Baidu's top-level
   * `rms_norm_eps`): the decoder's norms and the resampler's after_norm.
   * HF reads a Baidu-layout file's top-level fields into its text config, so
   * the default is the text config's in both layouts.
   */
  get textRmsNormEps(): number {
    return this.#once('textRmsNormEps', () => this.text.positive('rms_norm_eps', { default: 1e-5, from: FROM.text }));
  }

  /** `vision_config.rms_norm_eps`: HF's eps for every vision LayerNorm and the resampler's LayerNorms. */
  get visionRmsNormEps(): number {
    return this.#once('visionRmsNormEps', () => (this.vision ?? this.top).positive('rms_norm_eps', { default: 1e-6, from: FROM.vision }));
  }

  /**
   * The eps vLLM gives the tower's blocks: the top-level `rms_norm_eps` of the
   * file (Baidu: the text eps), 1e-6 when there is none (HF's layout, whose top
   * level has no eps; a bare vision_config, which has no top level).
   */
  get vllmVisionBlockEps(): number {
    return this.#once('vllmVisionBlockEps', () => {
      if (this.bareVision) return 1e-6;
      if (this.layout === 'baidu') return this.textRmsNormEps;
      return this.top.positive('rms_norm_eps', { default: 1e-6, from: FROM.vllmEps });
    });
  }
}
