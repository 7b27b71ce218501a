import { checkActivation, type VisionActivation } from '../activation.js';
import { isObject, type Json, optionalPositiveInt, optionalPositiveNumber, positiveInt, squarePatch } from '../config-fields.js';
import { VisionTowerError } from '../errors.js';

/**
 * Which reference the LayerNorm epsilons follow. They differ (MODEL_NOTES):
 * - `vllm`: the blocks' norm1/norm2 use the top-level `rms_norm_eps` of
 *   config.json (1e-5 in Baidu's hub config), 1e-6 when there is none (HF 5.17's
 *   own config layout has none); the final `ln` always uses 1e-6.
 *   vLLM: Ernie4_5_VLMoeForConditionalGeneration passes
 *   `getattr(config, "rms_norm_eps", 1e-6)` to Ernie4_5_VisionTransformer.
 * - `hf`: every vision LayerNorm uses `vision_config.rms_norm_eps` (default 1e-6).
 */
export type ErnieVisionReference = 'vllm' | 'hf';

/** The ERNIE-4.5-VL vision tower's hyperparameters (vLLM: Ernie4_5_VisionTransformer). */
export interface ErnieVisionConfig {
  depth: number;
  /** Dv: the tower's width (HF hidden_size, vLLM embed_dim). */
  hiddenSize: number;
  numHeads: number;
  /** MLP width (HF intermediate_size, vLLM embed_dim * mlp_ratio). */
  intermediateSize: number;
  patchSize: number;
  inChannels: number;
  spatialMergeSize: number;
  hiddenAct: VisionActivation;
  /** 2D rotary base (10000). */
  ropeTheta: number;
  /** Epsilon of every block's norm1 and norm2. */
  blockNormEps: number;
  /** Epsilon of the final `ln`. */
  finalNormEps: number;
}

export interface ErnieVisionConfigOptions {
  /** Whose LayerNorm epsilons to follow (default `vllm`). */
  reference?: ErnieVisionReference;
  /** Overrides both epsilons (blocks and final ln). */
  layerNormEps?: number;
}

/** Head size Dv / heads. */
export function ernieVisionHeadDim(config: ErnieVisionConfig): number {
  return config.hiddenSize / config.numHeads;
}

/**
 * Reads the vision tower's config from an HF config.json: its `vision_config`
 * in HF 5.17's layout (hidden_size, intermediate_size) or Baidu's hub layout
 * (embed_dim, mlp_ratio). A bare vision_config object is accepted too (then
 * there is no top-level rms_norm_eps, as with HF's layout).
 */
function fromHfConfig(json: unknown, options: ErnieVisionConfigOptions = {}): ErnieVisionConfig {
  if (!isObject(json)) throw new VisionTowerError('INVALID_CONFIG', `expected config.json's object, found ${JSON.stringify(json)}.`);
  const reference = options.reference ?? 'vllm';
  if (reference !== 'vllm' && reference !== 'hf') {
    throw new VisionTowerError('INVALID_CONFIG', `options.reference: expected 'vllm' or 'hf', found ${JSON.stringify(reference)}.`);
  }
  let vc: Json;
  let where: string;
  if (json.vision_config !== undefined) {
    if (!isObject(json.vision_config)) {
      throw new VisionTowerError('INVALID_CONFIG', `vision_config: expected an object, found ${JSON.stringify(json.vision_config)}.`);
    }
    [vc, where] = [json.vision_config, 'vision_config'];
  } else if (json.depth !== undefined) {
    [vc, where] = [json, 'vision_config'];
  } else {
    throw new VisionTowerError(
      'INVALID_CONFIG',
      'config.json has no vision_config: expected an ERNIE-4.5-VL config (model_type ernie4_5_vl_moe).',
    );
  }

  const depth = positiveInt(vc, 'depth', where);
  const hidden = optionalPositiveInt(vc, 'hidden_size', where);
  const embed = optionalPositiveInt(vc, 'embed_dim', where);
  if (hidden === undefined && embed === undefined) {
    throw new VisionTowerError('INVALID_CONFIG', `${where}: expected hidden_size (HF layout) or embed_dim (Baidu layout), found neither.`);
  }
  if (hidden !== undefined && embed !== undefined && hidden !== embed) {
    throw new VisionTowerError(
      'INCONSISTENT_CONFIG',
      `${where}: hidden_size ${hidden} and embed_dim ${embed} must be equal (vLLM asserts it).`,
    );
  }
  const hiddenSize = (embed ?? hidden)!;
  const numHeads = vc.num_heads !== undefined ? positiveInt(vc, 'num_heads', where) : positiveInt(vc, 'num_attention_heads', where);
  const headDim = hiddenSize / numHeads;
  if (!Number.isInteger(headDim) || headDim % 4 !== 0) {
    throw new VisionTowerError(
      'INCONSISTENT_CONFIG',
      `${where}: hidden size ${hiddenSize} / num_heads ${numHeads} must be an integer head size divisible by 4 (2D rotary splits it into h and w halves), found ${headDim}.`,
    );
  }
  let intermediateSize = optionalPositiveInt(vc, 'intermediate_size', where);
  const mlpRatio = optionalPositiveNumber(vc, 'mlp_ratio', where);
  if (intermediateSize === undefined) {
    if (mlpRatio === undefined)
      throw new VisionTowerError('INVALID_CONFIG', `${where}: expected intermediate_size or mlp_ratio, found neither.`);
    intermediateSize = Math.trunc(hiddenSize * mlpRatio); // vLLM: int(dim * mlp_ratio)
  }
  const patchSize = squarePatch(vc, 'patch_size', where);
  const inChannels = vc.in_channels === undefined ? 3 : positiveInt(vc, 'in_channels', where);
  const spatialMergeSize = vc.spatial_merge_size === undefined ? 2 : positiveInt(vc, 'spatial_merge_size', where);
  const hiddenAct = checkActivation(vc.hidden_act ?? 'quick_gelu', where);
  const rope = isObject(vc.rope_parameters) ? vc.rope_parameters : {};
  if (rope.rope_type !== undefined && rope.rope_type !== 'axial' && rope.rope_type !== 'default') {
    throw new VisionTowerError(
      'INVALID_CONFIG',
      `${where}.rope_parameters.rope_type: only the axial 2D rotary is supported, found ${JSON.stringify(rope.rope_type)}.`,
    );
  }
  const ropeTheta =
    optionalPositiveNumber(rope, 'rope_theta', `${where}.rope_parameters`) ?? optionalPositiveNumber(vc, 'rope_theta', where) ?? 10000;

  const visionEps = optionalPositiveNumber(vc, 'rms_norm_eps', where) ?? 1e-6;
  // A bare vision_config has no top-level epsilon to read.
  const topEps = vc !== json ? optionalPositiveNumber(json, 'rms_norm_eps', 'config') : undefined;
  let [blockNormEps, finalNormEps] = reference === 'hf' ? [visionEps, visionEps] : [topEps ?? 1e-6, 1e-6];
  if (options.layerNormEps !== undefined) {
    if (!(options.layerNormEps > 0))
      throw new VisionTowerError('INVALID_CONFIG', `options.layerNormEps: expected a positive number, found ${options.layerNormEps}.`);
    blockNormEps = finalNormEps = options.layerNormEps;
  }
  return {
    depth,
    hiddenSize,
    numHeads,
    intermediateSize,
    patchSize,
    inChannels,
    spatialMergeSize,
    hiddenAct,
    ropeTheta,
    blockNormEps,
    finalNormEps,
  };
}

/** `ErnieVisionConfig.fromHfConfig(json, { reference })`: the config type's companion. */
export const ErnieVisionConfig = { fromHfConfig } as const;
