import { type ConfigObject, ERNIE_DEFAULT_SOURCES, ErnieConfigFields } from '@vlmkit/config';
import { VISION_ACTIVATIONS, type VisionActivation } from '../activation.js';
import { VisionTowerError } from '../errors.js';

/**
 * Which reference the LayerNorm epsilons follow. They differ:
 * - `vllm`: the blocks' norm1/norm2 use the top-level `rms_norm_eps` of
 *   config.json (1e-5 in Baidu's hub config), 1e-6 when there is none (HF 5.17's
 *   own config layout has none); the final `ln` always uses 1e-6.
 *   vLLM: Ernie4_5_VLMoeForConditionalGeneration passes
 *   `getattr(config, "rms_norm_eps", 1e-6)` to Ernie4_5_VisionTransformer.
 * - `hf`: every vision LayerNorm uses `vision_config.rms_norm_eps` (default 1e-6).
 */
export type ErnieVisionReference = 'vllm' | 'hf';

/** What the ViT block, its attention and its rotary inputs read of a tower's config (ERNIE's, Qwen3-VL's). */
export interface VisionBlockConfig {
  /** Dv: the tower's width (HF hidden_size, vLLM embed_dim). */
  hiddenSize: number;
  numHeads: number;
  /** MLP width (HF intermediate_size, vLLM embed_dim * mlp_ratio). */
  intermediateSize: number;
  hiddenAct: VisionActivation;
  spatialMergeSize: number;
  /** 2D rotary base (10000). */
  ropeTheta: number;
  /** Epsilon of every block's norm1 and norm2. */
  blockNormEps: number;
}

/** The ERNIE-4.5-VL vision tower's hyperparameters (vLLM: Ernie4_5_VisionTransformer). */
export interface ErnieVisionConfig extends VisionBlockConfig {
  depth: number;
  patchSize: number;
  inChannels: number;
  /** Epsilon of the final `ln`. */
  finalNormEps: number;
}

export interface ErnieVisionConfigOptions {
  /** Whose LayerNorm epsilons to follow (default `vllm`). */
  reference?: ErnieVisionReference;
  /** Overrides both epsilons (blocks and final ln). */
  layerNormEps?: number;
}

/** Head size Dv / heads (of ERNIE's tower, or any tower with a width and heads: Qwen3-VL's). */
export function ernieVisionHeadDim(config: VisionBlockConfig): number {
  return config.hiddenSize / config.numHeads;
}

/** Where the defaults below come from (transformers 5.17 configuration_ernie4_5_vl_moe.py). */
const HF = ERNIE_DEFAULT_SOURCES.vision;

/**
 * Reads the vision tower's config from an HF config.json: its `vision_config`
 * in HF 5.17's layout (hidden_size, intermediate_size) or Baidu's hub layout
 * (embed_dim, mlp_ratio). A bare vision_config object is accepted too (then
 * there is no top-level rms_norm_eps, as with HF's layout). Throws
 * `ConfigError` (from @vlmkit/config) naming the field; `VisionTowerError`
 * for bad options.
 */
function fromHfConfig(json: unknown, options: ErnieVisionConfigOptions = {}): ErnieVisionConfig {
  const what = 'ERNIE vision config';
  const f = ErnieConfigFields.of(json, what);
  if (f.vision !== undefined) return fromFields(f, options);
  if (f.top.has('depth')) return fromFields(ErnieConfigFields.bareVision(json, what), options);
  return f.top.fail(
    'MISSING_CONFIG_FIELD',
    'vision_config',
    'is missing: expected an ERNIE-4.5-VL config (model_type ernie4_5_vl_moe) or a bare vision_config (with depth).',
  );
}

/**
 * The tower's config from an ERNIE-4.5-VL config.json whose layout is already detected: the
 * width, merge size and eps it shares with the resampler and the decoder through `f`'s readers.
 */
function fromFields(f: ErnieConfigFields, options: ErnieVisionConfigOptions = {}): ErnieVisionConfig {
  const reference = options.reference ?? 'vllm';
  if (reference !== 'vllm' && reference !== 'hf') {
    throw new VisionTowerError('INVALID_CONFIG', `options.reference: expected 'vllm' or 'hf', found ${JSON.stringify(reference)}.`);
  }
  if (f.vision === undefined) {
    return f.top.fail('MISSING_CONFIG_FIELD', 'vision_config', 'is missing; the vision tower reads its fields from it.');
  }
  const vc: ConfigObject = f.vision;

  const depth = vc.int('depth');
  const hiddenSize = f.visionHiddenSize;
  const headsKey = vc.has('num_heads') ? 'num_heads' : 'num_attention_heads';
  if (!vc.has(headsKey)) {
    vc.fail(
      'MISSING_CONFIG_FIELD',
      'num_heads',
      'is missing; expected num_heads (HF and Baidu layouts) or num_attention_heads, found neither.',
    );
  }
  const numHeads = vc.int(headsKey);
  const headDim = hiddenSize / numHeads;
  if (!Number.isInteger(headDim) || headDim % 4 !== 0) {
    vc.fail(
      'INCONSISTENT_CONFIG',
      headsKey,
      `${numHeads} must split hidden size ${hiddenSize} into an integer head size divisible by 4 (2D rotary splits it into h and w halves), found ${headDim}.`,
    );
  }
  let intermediateSize = vc.optionalInt('intermediate_size');
  const mlpRatio = vc.optionalPositive('mlp_ratio');
  if (intermediateSize === undefined) {
    if (mlpRatio === undefined)
      vc.fail('MISSING_CONFIG_FIELD', 'intermediate_size', 'is missing; expected intermediate_size or mlp_ratio, found neither.');
    // The one rounding for Baidu's layout: vLLM Ernie4_5_VisionBlock's int(dim * mlp_ratio) truncates.
    intermediateSize = Math.trunc(hiddenSize * mlpRatio);
  }
  const patchSize = vc.square('patch_size');
  const inChannels = vc.int('in_channels', { default: 3, from: HF });
  const spatialMergeSize = f.spatialMergeSize;
  const hiddenAct = vc.oneOf('hidden_act', VISION_ACTIVATIONS, { default: 'quick_gelu', from: HF, code: 'UNSUPPORTED_CONFIG' });
  const rope = vc.optionalObj('rope_parameters');
  rope?.oneOf('rope_type', ['axial', 'default'], {
    default: 'axial',
    from: HF,
    code: 'UNSUPPORTED_CONFIG',
    why: 'Only the axial 2D rotary is built.',
  });
  // Both references hard-code the vision rotary base: HF Qwen2_5_VisionRotaryEmbedding(theta=10000.0), vLLM
  // Ernie4_5_VisionRotaryEmbedding(theta=10000.0); HF 5.17 also writes it into rope_parameters.
  const ropeTheta =
    rope?.optionalPositive('rope_theta') ?? vc.positive('rope_theta', { default: 10000, from: 'HF/vLLM vision rotary embedding theta' });

  const visionEps = f.visionRmsNormEps;
  const vllmEps = f.vllmVisionBlockEps;
  // vLLM's final ln: nn.LayerNorm(hidden_size, eps=1e-6), not configurable.
  let [blockNormEps, finalNormEps] = reference === 'hf' ? [visionEps, visionEps] : [vllmEps, 1e-6];
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

/** `ErnieVisionConfig.fromHfConfig(json, { reference })`, `.fromFields(fields, { reference })`: the config type's companion. */
export const ErnieVisionConfig = { fromHfConfig, fromFields } as const;
