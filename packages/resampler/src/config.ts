import { ConfigError, ERNIE_DEFAULT_SOURCES, ErnieConfigFields } from '@vlmkit/config';

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

/** vLLM VariableResolutionResamplerModel: nn.LayerNorm(self.spatial_dim, eps=1e-6), not configurable. */
const VLLM_LAYER_NORM_EPS = 1e-6;

/**
 * Reads the resampler's config from a checkpoint's config.json, in either
 * layout found on the hub:
 * - HF transformers (`text_config` + `vision_config`, model_type ernie4_5_vl_moe);
 * - Baidu's original (flat `hidden_size`, `pixel_hidden_size`,
 *   `spatial_conv_size`, `temporal_conv_size`, `use_temporal_conv`), which vLLM reads.
 * Hidden sizes are required; merge sizes and eps take the references' defaults.
 * Throws `ConfigError` (from @vlmkit/config) naming the field: MISSING_CONFIG_FIELD,
 * INVALID_CONFIG, INCONSISTENT_CONFIG, UNSUPPORTED_CONFIG.
 */
export function fromHfConfig(json: unknown): ErnieResamplerConfig {
  return resamplerConfigFromFields(ErnieConfigFields.of(json, 'ERNIE resampler config'));
}

/**
 * The resampler's config from an ERNIE-4.5-VL config.json whose layout is already detected:
 * the widths, merge sizes and eps it shares with the tower and the decoder through `f`'s readers.
 * HF: Ernie4_5_VLMoeVariableResolutionResamplerModel.__init__; vLLM:
 * VariableResolutionResamplerModel(pixel_hidden_size, hidden_size, spatial_conv_size, temporal_conv_size).
 */
export function resamplerConfigFromFields(f: ErnieConfigFields): ErnieResamplerConfig {
  const { top } = f;
  const hf = f.layout === 'hf';
  if (!hf && !top.has('pixel_hidden_size') && !top.has('spatial_conv_size')) {
    top.fail(
      'MISSING_CONFIG_FIELD',
      'text_config',
      'is missing, and so are pixel_hidden_size and spatial_conv_size: config.json is neither the HF layout (text_config + vision_config) nor the Baidu layout (pixel_hidden_size, spatial_conv_size). Is this an ERNIE-4.5-VL checkpoint?',
    );
  }
  return validateResamplerConfig({
    visionHiddenSize: f.visionHiddenSize,
    textHiddenSize: f.textHiddenSize,
    spatialMergeSize: f.spatialMergeSize,
    temporalMergeSize: f.temporalMergeSize,
    // HF 5.17 always runs temporal slicing + temporal_linear.
    useTemporalConv: hf || top.bool('use_temporal_conv', { default: true, from: ERNIE_DEFAULT_SOURCES.baidu }),
    layerNormEps: hf ? f.visionRmsNormEps : VLLM_LAYER_NORM_EPS,
    rmsNormEps: f.textRmsNormEps,
  });
}

const WHAT = 'resampler config';

/**
 * Checks a config built by hand (or by `fromHfConfig`) and returns it.
 * The builders call it too, so a bad config fails before any node is added.
 * Throws `ConfigError` naming the `ErnieResamplerConfig` key.
 */
export function validateResamplerConfig(config: ErnieResamplerConfig): ErnieResamplerConfig {
  for (const key of ['visionHiddenSize', 'textHiddenSize', 'spatialMergeSize', 'temporalMergeSize'] as const) {
    const x = config[key];
    if (!Number.isInteger(x) || x < 1) throw new ConfigError('INVALID_CONFIG', key, WHAT, `must be a positive integer, got ${String(x)}.`);
  }
  for (const key of ['layerNormEps', 'rmsNormEps'] as const) {
    const x = config[key];
    if (typeof x !== 'number' || !Number.isFinite(x) || x <= 0)
      throw new ConfigError('INVALID_CONFIG', key, WHAT, `must be a positive number, got ${String(x)}.`);
  }
  if (typeof config.useTemporalConv !== 'boolean') {
    throw new ConfigError('INVALID_CONFIG', 'useTemporalConv', WHAT, `must be a boolean, got ${String(config.useTemporalConv)}.`);
  }
  // HF _temporal_slicing: "hard-coded for temporal_merge_size == 2"; vLLM steps frames by 2 as well.
  if (config.useTemporalConv && config.temporalMergeSize !== 2) {
    throw new ConfigError(
      'UNSUPPORTED_CONFIG',
      'temporalMergeSize',
      WHAT,
      `${config.temporalMergeSize} is not supported; the references pair frames (even, odd) and only handle 2.`,
    );
  }
  return config;
}
