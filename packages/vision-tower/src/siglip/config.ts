import { checkActivation, type VisionActivation } from '../activation.js';
import { isObject, type Json, positiveInt, positiveNumber, squarePatch } from '../config-fields.js';
import { VisionTowerError } from '../errors.js';

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

/** HF SiglipVisionConfig's defaults, for fields save_pretrained left out. */
const DEFAULTS: Json = {
  hidden_size: 768,
  intermediate_size: 3072,
  num_hidden_layers: 12,
  num_attention_heads: 12,
  num_channels: 3,
  image_size: 224,
  patch_size: 16,
  hidden_act: 'gelu_pytorch_tanh',
  layer_norm_eps: 1e-6,
};

/** Patches per side and in all. */
export function siglipNumPatches(config: SiglipVisionConfig): number {
  return (config.imageSize / config.patchSize) ** 2;
}

/**
 * Reads `vision_config` of a config.json that has one (Granite 4 Vision,
 * LLaVA-style models), or a bare SiglipVisionConfig object. Absent fields take
 * HF's defaults, as transformers does.
 */
function fromHfConfig(json: unknown): SiglipVisionConfig {
  if (!isObject(json)) throw new VisionTowerError('INVALID_CONFIG', `expected config.json's object, found ${JSON.stringify(json)}.`);
  const inner = json.vision_config ?? json;
  if (!isObject(inner)) throw new VisionTowerError('INVALID_CONFIG', `vision_config: expected an object, found ${JSON.stringify(inner)}.`);
  const modelType = inner.model_type;
  if (modelType !== undefined && modelType !== 'siglip_vision_model' && modelType !== 'siglip2_vision_model') {
    throw new VisionTowerError(
      'INVALID_CONFIG',
      `vision_config.model_type: expected 'siglip_vision_model', found ${JSON.stringify(modelType)}.`,
    );
  }
  const vc: Json = { ...DEFAULTS, ...Object.fromEntries(Object.entries(inner).filter(([, v]) => v !== undefined && v !== null)) };
  const where = 'vision_config';
  const hiddenSize = positiveInt(vc, 'hidden_size', where);
  const numAttentionHeads = positiveInt(vc, 'num_attention_heads', where);
  if (hiddenSize % numAttentionHeads !== 0) {
    throw new VisionTowerError(
      'INCONSISTENT_CONFIG',
      `${where}: hidden_size ${hiddenSize} is not divisible by num_attention_heads ${numAttentionHeads}.`,
    );
  }
  const imageSize = squarePatch(vc, 'image_size', where);
  const patchSize = squarePatch(vc, 'patch_size', where);
  if (imageSize % patchSize !== 0) {
    throw new VisionTowerError('INCONSISTENT_CONFIG', `${where}: image_size ${imageSize} is not a multiple of patch_size ${patchSize}.`);
  }
  return {
    hiddenSize,
    intermediateSize: positiveInt(vc, 'intermediate_size', where),
    numHiddenLayers: positiveInt(vc, 'num_hidden_layers', where),
    numAttentionHeads,
    numChannels: positiveInt(vc, 'num_channels', where),
    imageSize,
    patchSize,
    hiddenAct: checkActivation(vc.hidden_act, where),
    layerNormEps: positiveNumber(vc, 'layer_norm_eps', where),
  };
}

/** `SiglipVisionConfig.fromHfConfig(json)`: the config type's companion. */
export const SiglipVisionConfig = { fromHfConfig } as const;
