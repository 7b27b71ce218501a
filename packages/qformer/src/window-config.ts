import { ConfigError, type ConfigObject, fields, GraniteConfigFields } from '@vlmkit/config';
import { BLIP2_QFORMER_DEFAULTS, type Blip2QFormerConfig, parseQFormer, validateQFormerConfig } from './qformer-config.js';

/**
 * What Granite 4 Vision's WindowQFormerDownsampler needs to know.
 * Dv = visionHiddenSize, D = textHiddenSize, s = imageSide, q/w = querySide/windowSide.
 */
export interface WindowQFormerConfig {
  /** Dv: SigLIP hidden size (vision_config.hidden_size); the Q-Former runs at this width. */
  readonly visionHiddenSize: number;
  /** D: the language model's hidden size (text_config.hidden_size), out_linear's output. */
  readonly textHiddenSize: number;
  /** s: patches per side of a tile (vision_config.image_size / patch_size); a tile has s*s features. */
  readonly imageSide: number;
  /** q: query window side, the numerator of downsample_rate ("4/8" -> 4). */
  readonly querySide: number;
  /** w: key window side, the denominator of downsample_rate ("4/8" -> 8); s must be a multiple. */
  readonly windowSide: number;
  /** eps of the input LayerNorm `norm` (hard-coded 1e-6 in HF and vLLM). */
  readonly normEps: number;
  /** The Q-Former run per window. Its hiddenSize and encoderHiddenSize must equal Dv. */
  readonly qformer: Blip2QFormerConfig;
}

/** Which reference's reading of config.json to follow where they differ (see README "HF and vLLM"). */
export interface FromHfConfigOptions {
  /**
   * 'hf' (default): the Q-Former follows `qformer_config` when present, else
   * the defaults both references derive from Dv. 'vllm': vLLM ignores
   * `qformer_config` and always builds 1 layer, Dv/64 heads, intermediate 3072.
   */
  readonly reference?: 'hf' | 'vllm';
}

const WHAT = 'Granite 4 Vision projector config';

/**
 * Reads the downsampler's config from a Granite 4 Vision config.json
 * (HF 5.17 Granite4VisionConfig; vLLM reads the same file).
 * `downsample_rate` ("q/w") and `text_config.hidden_size` are required; the
 * vision fields take the vision model type's defaults.
 * Throws `ConfigError` (from @vlmkit/config) naming the field: MISSING_CONFIG_FIELD,
 * INVALID_CONFIG, INCONSISTENT_CONFIG, UNSUPPORTED_CONFIG.
 */
export function fromHfConfig(json: unknown, options: FromHfConfigOptions = {}): WindowQFormerConfig {
  return windowQFormerConfigFromFields(GraniteConfigFields.of(json, WHAT), options);
}

/**
 * The downsampler's config from a Granite 4 Vision config.json read once: the vision sizes
 * (type-dependent HF defaults) and the text width through `f`'s readers, shared with the tower
 * and the decoder; `downsample_rate` and `qformer_config` here.
 */
export function windowQFormerConfigFromFields(f: GraniteConfigFields, options: FromHfConfigOptions = {}): WindowQFormerConfig {
  const { top, vision } = f;
  const { hiddenSize: dv, imageSize, patchSize } = f.visionSizes;
  // HF/vLLM: image_side = image_size // patch_size (SigLIP's conv drops a remainder).
  const imageSide = Math.floor(imageSize / patchSize);
  const [querySide, windowSide] = readDownsampleRate(top);
  const qf = top.optionalObj('qformer_config');
  const qformer = options.reference === 'vllm' || qf === undefined ? validateQFormerConfig(derivedQFormer(dv)) : parseQFormer(qf);
  if (qf !== undefined && options.reference !== 'vllm') {
    // The same check as validateWindowQFormerConfig's, named by the config.json fields (and whether a default was used).
    for (const [key, x] of [
      ['hidden_size', qformer.hiddenSize],
      ['encoder_hidden_size', qformer.encoderHiddenSize],
    ] as const) {
      if (x !== dv) {
        const dvFrom = vision.has('hidden_size') ? '' : `, the ${f.visionType} default`;
        qf.fail(
          'INCONSISTENT_CONFIG',
          key,
          `(${x}${qf.has(key) ? '' : ", HF Blip2QFormerConfig's default"}) must equal vision_config.hidden_size (${dv}${dvFrom}): the Q-Former runs on the vision features.`,
        );
      }
    }
  }
  return validateWindowQFormerConfig({
    visionHiddenSize: dv,
    textHiddenSize: f.textHiddenSize,
    imageSide,
    querySide,
    windowSide,
    normEps: 1e-6, // HF and vLLM: nn.LayerNorm(vision_hidden_size, eps=1e-6), not configurable
    qformer,
  });
}

/**
 * HF Granite4VisionConfig.__post_init__'s qformer_config when absent, and what vLLM's
 * WindowQFormerDownsampler always builds: 1 layer, Dv/64 heads, intermediate
 * 3072, cross-attention every layer, encoder width Dv; the rest HF
 * Blip2QFormerConfig's defaults (GELU, LayerNorm eps 1e-12).
 */
export function derivedQFormer(visionHiddenSize: number): Blip2QFormerConfig {
  return {
    ...BLIP2_QFORMER_DEFAULTS,
    hiddenSize: visionHiddenSize,
    numHiddenLayers: 1,
    numAttentionHeads: Math.floor(visionHiddenSize / 64),
    intermediateSize: 3072,
    crossAttentionFrequency: 1,
    encoderHiddenSize: visionHiddenSize,
  };
}

/** `downsample_rate` of a config.json: "q/w" -> [q, w], as HF/vLLM split it (not reduced: "4/8" is q 4, w 8). */
export function parseDownsampleRate(rate: unknown): [number, number] {
  return readDownsampleRate(fields({ downsample_rate: rate }, WHAT));
}

function readDownsampleRate(c: ConfigObject): [number, number] {
  const expected = '"q/w" with positive integers (e.g. "4/8")';
  if (!c.has('downsample_rate'))
    c.fail('MISSING_CONFIG_FIELD', 'downsample_rate', `is missing; Granite 4 Vision configs set it to ${expected}.`);
  const rate = c.raw('downsample_rate');
  const m = typeof rate === 'string' ? /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(rate) : null;
  if (m === null || Number(m[1]) < 1 || Number(m[2]) < 1) {
    c.fail('INVALID_CONFIG', 'downsample_rate', `must be ${expected}, found ${JSON.stringify(rate)}.`);
  }
  return [Number(m[1]), Number(m[2])];
}

const WINDOW = 'window Q-Former config';

/**
 * Checks a config built by hand (or by `fromHfConfig`) and returns it. The
 * builders call it too. Mode-specific limits (a spatial offset needs q/w = 1/2)
 * are checked by the builder. Throws `ConfigError` naming the `WindowQFormerConfig` key.
 */
export function validateWindowQFormerConfig(config: WindowQFormerConfig): WindowQFormerConfig {
  for (const key of ['visionHiddenSize', 'textHiddenSize', 'imageSide', 'querySide', 'windowSide'] as const) {
    const x = config[key];
    if (!Number.isInteger(x) || x < 1)
      throw new ConfigError('INVALID_CONFIG', key, WINDOW, `must be a positive integer, got ${String(x)}.`);
  }
  if (typeof config.normEps !== 'number' || !Number.isFinite(config.normEps) || config.normEps <= 0) {
    throw new ConfigError('INVALID_CONFIG', 'normEps', WINDOW, `must be a positive number, got ${String(config.normEps)}.`);
  }
  const qf = validateQFormerConfig(config.qformer);
  const { visionHiddenSize: dv, imageSide: s, querySide: q, windowSide: w } = config;
  // HF/vLLM _windowed_raster views [B, s, s, C] as [B, s/w, w, s/w, w, C].
  if (s % w !== 0) {
    throw new ConfigError(
      'INCONSISTENT_CONFIG',
      'windowSide',
      WINDOW,
      `${w} (the key window side of downsample_rate ${q}/${w}) does not divide the image side ${s} (patches).`,
    );
  }
  if (q > w)
    throw new ConfigError(
      'INCONSISTENT_CONFIG',
      'querySide',
      WINDOW,
      `${q} is larger than the key window side ${w}: downsample_rate must be at most 1.`,
    );
  // query (Dv) is added to the query embeds, image_positions (Dv) to the encoder states.
  if (qf.hiddenSize !== dv || qf.encoderHiddenSize !== dv) {
    throw new ConfigError(
      'INCONSISTENT_CONFIG',
      'qformer',
      WINDOW,
      `hiddenSize (${qf.hiddenSize}) and encoderHiddenSize (${qf.encoderHiddenSize}) must both equal the vision hidden size ${dv}.`,
    );
  }
  return config;
}

/** Sizes derived from a config: windows per side n = s/w, downsampled side n*q, tokens per tile (n*q)^2. */
export function windowGeometry(config: WindowQFormerConfig): { numWindows: number; downsampledSide: number; tokensPerTile: number } {
  const numWindows = config.imageSide / config.windowSide;
  const downsampledSide = numWindows * config.querySide;
  return { numWindows, downsampledSide, tokensPerTile: downsampledSide ** 2 };
}
