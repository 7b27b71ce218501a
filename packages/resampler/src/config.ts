import { ConfigError, type ConfigObject, fields } from '@vlmkit/config';

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

/** Where the defaults below come from. */
const HF_VISION = 'HF Ernie4_5_VLMoeVisionConfig';
const HF_TEXT = 'HF Ernie4_5_VLMoeTextConfig';
const BAIDU = "Baidu Ernie4_5_VLMoEConfig (the hub's configuration_ernie_45t_vl.py)";
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
  const top: ConfigObject = fields(json, 'ERNIE resampler config');
  const v: ConfigObject | undefined = top.optionalObj('vision_config');
  let config: ErnieResamplerConfig;
  if (top.has('text_config')) {
    const text = top.obj('text_config');
    if (v === undefined) top.fail('MISSING_CONFIG_FIELD', 'vision_config', 'is missing; the HF layout has text_config and vision_config.');
    // HF: Ernie4_5_VLMoeVariableResolutionResamplerModel.__init__
    config = {
      visionHiddenSize: v.int('hidden_size'),
      textHiddenSize: text.int('hidden_size'),
      spatialMergeSize: v.int('spatial_merge_size', { default: 2, from: HF_VISION }),
      temporalMergeSize: v.int('temporal_merge_size', { default: 2, from: HF_VISION }),
      useTemporalConv: true, // HF 5.17 always runs temporal slicing + temporal_linear
      layerNormEps: v.positive('rms_norm_eps', { default: 1e-6, from: HF_VISION }),
      rmsNormEps: text.positive('rms_norm_eps', { default: 1e-5, from: HF_TEXT }),
    };
  } else if (top.has('pixel_hidden_size') || top.has('spatial_conv_size')) {
    // vLLM: VariableResolutionResamplerModel(config.pixel_hidden_size, config.hidden_size, spatial_conv_size, temporal_conv_size)
    const visionHidden = top.has('pixel_hidden_size') ? top.int('pixel_hidden_size') : v?.int('hidden_size');
    if (visionHidden === undefined)
      top.fail('MISSING_CONFIG_FIELD', 'pixel_hidden_size', 'is missing, and so is vision_config.hidden_size.');
    const towerHidden = v?.optionalInt('hidden_size');
    if (towerHidden !== undefined && towerHidden !== visionHidden) {
      top.fail(
        'INCONSISTENT_CONFIG',
        'pixel_hidden_size',
        `${visionHidden} differs from vision_config.hidden_size ${towerHidden}; the resampler's input is the tower's output.`,
      );
    }
    config = {
      visionHiddenSize: visionHidden,
      textHiddenSize: top.int('hidden_size'),
      spatialMergeSize: top.int('spatial_conv_size', { default: 2, from: BAIDU }),
      temporalMergeSize: top.int('temporal_conv_size', { default: 2, from: BAIDU }),
      useTemporalConv: top.bool('use_temporal_conv', { default: true, from: BAIDU }),
      layerNormEps: VLLM_LAYER_NORM_EPS,
      rmsNormEps: top.positive('rms_norm_eps', { default: 1e-6, from: 'vLLM getattr(config, "rms_norm_eps", 1e-6)' }),
    };
  } else {
    top.fail(
      'MISSING_CONFIG_FIELD',
      'text_config',
      'is missing, and so are pixel_hidden_size and spatial_conv_size: config.json is neither the HF layout (text_config + vision_config) nor the Baidu layout (pixel_hidden_size, spatial_conv_size). Is this an ERNIE-4.5-VL checkpoint?',
    );
  }
  return validateResamplerConfig(config);
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
