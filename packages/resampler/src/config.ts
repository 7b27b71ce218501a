import { ResamplerError } from './errors.js';

/**
 * What the ERNIE-4.5-VL resampler needs to know. Dimensions in the
 * reference's terms: Dv = vision hidden, s = spatial merge, D = text hidden.
 */
export interface ErnieResamplerConfig {
  /** Dv: the vision tower's hidden size (HF vision_config.hidden_size, Baidu pixel_hidden_size). */
  readonly visionHiddenSize: number;
  /** D: the text model's hidden size (HF text_config.hidden_size, Baidu hidden_size). */
  readonly textHiddenSize: number;
  /** s: s*s consecutive patches form one token (HF vision_config.spatial_merge_size, Baidu spatial_conv_size). */
  readonly spatialMergeSize: number;
  /** Frames merged into one token (HF vision_config.temporal_merge_size, Baidu temporal_conv_size); only 2 is supported. */
  readonly temporalMergeSize: number;
  /** Baidu/vLLM use_temporal_conv: whether temporal slicing + temporal_linear run. HF 5.17 always runs them. */
  readonly useTemporalConv: boolean;
  /** eps of the LayerNorms closing spatial_linear and temporal_linear (HF vision_config.rms_norm_eps; vLLM 1e-6). */
  readonly layerNormEps: number;
  /** eps of after_norm, an RMSNorm (HF text_config.rms_norm_eps, Baidu rms_norm_eps). */
  readonly rmsNormEps: number;
}

/** Defaults the references apply when a field is absent (HF 5.17 config classes; vLLM's hard-coded 1e-6). */
const DEFAULTS = { spatialMergeSize: 2, temporalMergeSize: 2, useTemporalConv: true, layerNormEps: 1e-6, rmsNormEps: 1e-5 } as const;

type Json = Record<string, unknown>;

/**
 * Reads the resampler's config from a checkpoint's config.json, in either
 * layout found on the hub:
 * - HF transformers (`text_config` + `vision_config`, model_type ernie4_5_vl_moe);
 * - Baidu's original (flat `hidden_size`, `pixel_hidden_size`,
 *   `spatial_conv_size`, `temporal_conv_size`, `use_temporal_conv`), which vLLM reads.
 * Hidden sizes are required; merge sizes and eps take the references' defaults.
 * Throws `ResamplerError` (MISSING_CONFIG_FIELD, INVALID_CONFIG, UNSUPPORTED_CONFIG).
 */
export function fromHfConfig(json: unknown): ErnieResamplerConfig {
  if (!isObject(json)) throw new ResamplerError('MISSING_CONFIG_FIELD', `config.json must be a JSON object, got ${describe(json)}`);
  const vision = json['vision_config'];
  if (vision !== undefined && !isObject(vision)) {
    throw new ResamplerError('INVALID_CONFIG', `config.json: vision_config must be an object, got ${describe(vision)}`);
  }
  const v: Json = vision ?? {};
  let config: ErnieResamplerConfig;
  if (json['text_config'] !== undefined) {
    const text = json['text_config'];
    if (!isObject(text)) throw new ResamplerError('INVALID_CONFIG', `config.json: text_config must be an object, got ${describe(text)}`);
    if (vision === undefined)
      throw new ResamplerError('MISSING_CONFIG_FIELD', 'config.json has text_config but no vision_config (HF layout needs both)');
    // HF: Ernie4_5_VLMoeVariableResolutionResamplerModel.__init__
    config = {
      visionHiddenSize: int(v, 'hidden_size', 'vision_config.'),
      textHiddenSize: int(text, 'hidden_size', 'text_config.'),
      spatialMergeSize: int(v, 'spatial_merge_size', 'vision_config.', DEFAULTS.spatialMergeSize),
      temporalMergeSize: int(v, 'temporal_merge_size', 'vision_config.', DEFAULTS.temporalMergeSize),
      useTemporalConv: true,
      layerNormEps: eps(v, 'rms_norm_eps', 'vision_config.', DEFAULTS.layerNormEps),
      rmsNormEps: eps(text, 'rms_norm_eps', 'text_config.', DEFAULTS.rmsNormEps),
    };
  } else if (json['pixel_hidden_size'] !== undefined || json['spatial_conv_size'] !== undefined) {
    // vLLM: VariableResolutionResamplerModel(config.pixel_hidden_size, config.hidden_size, spatial_conv_size, temporal_conv_size)
    const visionHidden =
      json['pixel_hidden_size'] !== undefined ? int(json, 'pixel_hidden_size', '') : int(v, 'hidden_size', 'vision_config.');
    if (v['hidden_size'] !== undefined && int(v, 'hidden_size', 'vision_config.') !== visionHidden) {
      throw new ResamplerError(
        'INVALID_CONFIG',
        `config.json: pixel_hidden_size ${visionHidden} differs from vision_config.hidden_size ${String(v['hidden_size'])}; the resampler's input is the tower's output`,
      );
    }
    config = {
      visionHiddenSize: visionHidden,
      textHiddenSize: int(json, 'hidden_size', ''),
      spatialMergeSize: int(json, 'spatial_conv_size', '', DEFAULTS.spatialMergeSize),
      temporalMergeSize: int(json, 'temporal_conv_size', '', DEFAULTS.temporalMergeSize),
      useTemporalConv: bool(json, 'use_temporal_conv', DEFAULTS.useTemporalConv),
      layerNormEps: DEFAULTS.layerNormEps, // vLLM: nn.LayerNorm(self.spatial_dim, eps=1e-6)
      rmsNormEps: eps(json, 'rms_norm_eps', '', 1e-6), // vLLM: getattr(config, "rms_norm_eps", 1e-6)
    };
  } else {
    throw new ResamplerError(
      'MISSING_CONFIG_FIELD',
      'config.json is neither the HF layout (text_config + vision_config) nor the Baidu layout (pixel_hidden_size, spatial_conv_size): is this an ERNIE-4.5-VL checkpoint?',
    );
  }
  return validateResamplerConfig(config);
}

/**
 * Checks a config built by hand (or by `fromHfConfig`) and returns it.
 * The builders call it too, so a bad config fails before any node is added.
 */
export function validateResamplerConfig(config: ErnieResamplerConfig): ErnieResamplerConfig {
  for (const key of ['visionHiddenSize', 'textHiddenSize', 'spatialMergeSize', 'temporalMergeSize'] as const) {
    const x = config[key];
    if (!Number.isInteger(x) || x < 1)
      throw new ResamplerError('INVALID_CONFIG', `resampler config: ${key} must be a positive integer, got ${String(x)}`);
  }
  for (const key of ['layerNormEps', 'rmsNormEps'] as const) {
    const x = config[key];
    if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0)
      throw new ResamplerError('INVALID_CONFIG', `resampler config: ${key} must be a positive number, got ${String(x)}`);
  }
  if (typeof config.useTemporalConv !== 'boolean') {
    throw new ResamplerError(
      'INVALID_CONFIG',
      `resampler config: useTemporalConv must be a boolean, got ${String(config.useTemporalConv)}`,
    );
  }
  // HF _temporal_slicing: "hard-coded for temporal_merge_size == 2"; vLLM steps frames by 2 as well.
  if (config.useTemporalConv && config.temporalMergeSize !== 2) {
    throw new ResamplerError(
      'UNSUPPORTED_CONFIG',
      `resampler config: temporalMergeSize ${config.temporalMergeSize} is not supported; the references pair frames (even, odd) and only handle 2`,
    );
  }
  return config;
}

function isObject(x: unknown): x is Json {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function describe(x: unknown): string {
  return x === null ? 'null' : Array.isArray(x) ? 'an array' : `${typeof x} ${JSON.stringify(x)}`;
}

function int(o: Json, key: string, path: string, fallback?: number): number {
  const x = o[key];
  if (x === undefined || x === null) {
    if (fallback !== undefined) return fallback;
    throw new ResamplerError('MISSING_CONFIG_FIELD', `config.json: ${path}${key} is missing (the resampler needs it)`);
  }
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) {
    throw new ResamplerError('INVALID_CONFIG', `config.json: ${path}${key} must be a positive integer, got ${describe(x)}`);
  }
  return x;
}

function eps(o: Json, key: string, path: string, fallback: number): number {
  const x = o[key];
  if (x === undefined || x === null) return fallback;
  if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0) {
    throw new ResamplerError('INVALID_CONFIG', `config.json: ${path}${key} must be a positive number, got ${describe(x)}`);
  }
  return x;
}

function bool(o: Json, key: string, fallback: boolean): boolean {
  const x = o[key];
  if (x === undefined || x === null) return fallback;
  if (typeof x !== 'boolean') throw new ResamplerError('INVALID_CONFIG', `config.json: ${key} must be true or false, got ${describe(x)}`);
  return x;
}
