import { type ConfigObject, fields, readVisionSizes, type VisionSizes } from '@vlmkit/config';
import { VISION_ACTIVATIONS, type VisionActivation } from '../activation.js';

/** A SigLIP vision encoder's hyperparameters (HF SiglipVisionConfig; Granite 4 Vision's tower). */
export interface SiglipVisionConfig {
  hiddenSize: number;
  intermediateSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numChannels: number;
  /** Square input side in pixels; the tower has (imageSize / patchSize)^2 learned positions. */
  imageSize: number;
  patchSize: number;
  hiddenAct: VisionActivation;
  layerNormEps: number;
}

/** Where the defaults below come from (transformers 5.17 configuration_siglip.py). */
const HF = 'HF SiglipVisionConfig';

/** Patches per side and in all. */
export function siglipNumPatches(config: SiglipVisionConfig): number {
  return (config.imageSize / config.patchSize) ** 2;
}

/**
 * Reads `vision_config` of a config.json that has one (Granite 4 Vision,
 * LLaVA-style models), or a bare SiglipVisionConfig object. Absent fields take
 * HF's defaults, as transformers does. Throws `ConfigError` (from @vlmkit/config) naming the field.
 */
function fromHfConfig(json: unknown): SiglipVisionConfig {
  const top = fields(json, 'SigLIP vision config');
  const vc: ConfigObject = top.has('vision_config') ? top.obj('vision_config') : fields(json, top.config, 'vision_config');
  if (vc.has('model_type')) vc.oneOf('model_type', ['siglip_vision_model', 'siglip2_vision_model']);
  return fromFields(vc, readVisionSizes(vc, 'siglip_vision_model'));
}

/**
 * The tower's config from its `vision_config` object and the sizes already read from it
 * (`readVisionSizes`; a family config reads them once for the tower and its projector).
 */
function fromFields(vc: ConfigObject, sizes: VisionSizes): SiglipVisionConfig {
  const { hiddenSize, imageSize, patchSize } = sizes;
  const numAttentionHeads = vc.int('num_attention_heads', { default: 12, from: HF });
  if (hiddenSize % numAttentionHeads !== 0) {
    vc.fail('INCONSISTENT_CONFIG', 'num_attention_heads', `${numAttentionHeads} does not divide hidden_size ${hiddenSize}.`);
  }
  if (imageSize % patchSize !== 0) {
    vc.fail('INCONSISTENT_CONFIG', 'image_size', `must be a multiple of patch_size ${patchSize}, found ${imageSize}.`);
  }
  return {
    hiddenSize,
    intermediateSize: vc.int('intermediate_size', { default: 3072, from: HF }),
    numHiddenLayers: vc.int('num_hidden_layers', { default: 12, from: HF }),
    numAttentionHeads,
    numChannels: vc.int('num_channels', { default: 3, from: HF }),
    imageSize,
    patchSize,
    hiddenAct: vc.oneOf('hidden_act', VISION_ACTIVATIONS, { default: 'gelu_pytorch_tanh', from: HF, code: 'UNSUPPORTED_CONFIG' }),
    layerNormEps: vc.positive('layer_norm_eps', { default: 1e-6, from: HF }),
  };
}

/** `SiglipVisionConfig.fromHfConfig(json)`, `.fromFields(visionConfig, sizes)`: the config type's companion. */
export const SiglipVisionConfig = { fromHfConfig, fromFields } as const;
