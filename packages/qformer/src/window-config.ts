import { QFormerError } from './errors.js';
import { describe, int, isObject, type Json, section } from './json.js';
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

/** HF 5.17 defaults of the vision sub-config by model_type (Granite4VisionConfig defaults a dict without one to CLIP). */
const VISION_DEFAULTS: Record<string, { hidden: number; image: number; patch: number }> = {
  siglip_vision_model: { hidden: 768, image: 224, patch: 16 },
  clip_vision_model: { hidden: 768, image: 224, patch: 32 },
};

/**
 * Reads the downsampler's config from a Granite 4 Vision config.json
 * (HF 5.17 Granite4VisionConfig; vLLM reads the same file).
 * `downsample_rate` ("q/w") and `text_config.hidden_size` are required; the
 * vision fields take the vision model type's defaults.
 * Throws `QFormerError` (MISSING_CONFIG_FIELD, INVALID_CONFIG, UNSUPPORTED_CONFIG).
 */
export function fromHfConfig(json: unknown, options: FromHfConfigOptions = {}): WindowQFormerConfig {
  if (!isObject(json)) throw new QFormerError('MISSING_CONFIG_FIELD', `config.json must be a JSON object, got ${describe(json)}`);
  const vision = section(json, 'vision_config', '');
  const text = section(json, 'text_config', '');
  const visionType = typeof vision['model_type'] === 'string' ? vision['model_type'] : 'clip_vision_model';
  const vd = VISION_DEFAULTS[visionType];
  if (vd === undefined) {
    throw new QFormerError(
      'UNSUPPORTED_CONFIG',
      `config.json: vision_config.model_type "${visionType}" is not supported (Granite 4 Vision uses siglip_vision_model)`,
    );
  }
  const dv = int(vision, 'hidden_size', 'vision_config.', vd.hidden);
  const imageSize = int(vision, 'image_size', 'vision_config.', vd.image);
  const patchSize = int(vision, 'patch_size', 'vision_config.', vd.patch);
  // HF/vLLM: image_side = image_size // patch_size (SigLIP's conv drops a remainder).
  const imageSide = Math.floor(imageSize / patchSize);
  const [querySide, windowSide] = parseDownsampleRate(json['downsample_rate']);
  const derived = derivedQFormer(dv);
  const qf = json['qformer_config'];
  let qformer: Blip2QFormerConfig;
  if (options.reference === 'vllm' || qf === undefined || qf === null) {
    qformer = validateQFormerConfig(derived);
  } else {
    if (!isObject(qf)) throw new QFormerError('INVALID_CONFIG', `config.json: qformer_config must be an object, got ${describe(qf)}`);
    qformer = parseQFormer(qf as Json, 'qformer_config.');
  }
  return validateWindowQFormerConfig({
    visionHiddenSize: dv,
    textHiddenSize: int(text, 'hidden_size', 'text_config.'),
    imageSide,
    querySide,
    windowSide,
    normEps: 1e-6,
    qformer,
  });
}

/**
 * HF Granite4VisionConfig's qformer_config when absent, and what vLLM's
 * WindowQFormerDownsampler always builds: 1 layer, Dv/64 heads,
 * intermediate 3072, cross-attention every layer, encoder width Dv.
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

/** "q/w" -> [q, w], as HF/vLLM split it (not reduced: "4/8" is q 4, w 8). */
export function parseDownsampleRate(rate: unknown): [number, number] {
  if (rate === undefined || rate === null) {
    throw new QFormerError('MISSING_CONFIG_FIELD', 'config.json: downsample_rate is missing (Granite 4 Vision configs set it, e.g. "4/8")');
  }
  const m = typeof rate === 'string' ? /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(rate) : null;
  if (m === null || Number(m[1]) < 1 || Number(m[2]) < 1) {
    throw new QFormerError(
      'INVALID_CONFIG',
      `config.json: downsample_rate must be "q/w" with positive integers (e.g. "4/8"), got ${describe(rate)}`,
    );
  }
  return [Number(m[1]), Number(m[2])];
}

/**
 * Checks a config built by hand (or by `fromHfConfig`) and returns it. The
 * builders call it too. Mode-specific limits (a spatial offset needs q/w = 1/2)
 * are checked by the builder.
 */
export function validateWindowQFormerConfig(config: WindowQFormerConfig): WindowQFormerConfig {
  for (const key of ['visionHiddenSize', 'textHiddenSize', 'imageSide', 'querySide', 'windowSide'] as const) {
    const x = config[key];
    if (!Number.isInteger(x) || x < 1)
      throw new QFormerError('INVALID_CONFIG', `window Q-Former config: ${key} must be a positive integer, got ${String(x)}`);
  }
  if (typeof config.normEps !== 'number' || !Number.isFinite(config.normEps) || config.normEps <= 0) {
    throw new QFormerError('INVALID_CONFIG', `window Q-Former config: normEps must be a positive number, got ${String(config.normEps)}`);
  }
  const qf = validateQFormerConfig(config.qformer);
  const { visionHiddenSize: dv, imageSide: s, querySide: q, windowSide: w } = config;
  // HF/vLLM _windowed_raster views [B, s, s, C] as [B, s/w, w, s/w, w, C].
  if (s % w !== 0) {
    throw new QFormerError(
      'INVALID_CONFIG',
      `window Q-Former config: image side ${s} (patches) is not a multiple of the key window side ${w} (downsample_rate ${q}/${w})`,
    );
  }
  if (q > w)
    throw new QFormerError(
      'INVALID_CONFIG',
      `window Q-Former config: query side ${q} is larger than the key window side ${w}: downsample_rate must be at most 1`,
    );
  // query (Dv) is added to the query embeds, image_positions (Dv) to the encoder states.
  if (qf.hiddenSize !== dv || qf.encoderHiddenSize !== dv) {
    throw new QFormerError(
      'INVALID_CONFIG',
      `window Q-Former config: the Q-Former's hiddenSize (${qf.hiddenSize}) and encoderHiddenSize (${qf.encoderHiddenSize}) must both equal the vision hidden size ${dv}`,
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
