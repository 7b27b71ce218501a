import { type ConfigObject, fields } from '@vlmkit/config';
import { VISION_ACTIVATIONS } from '../activation.js';
import type { VisionBlockConfig } from '../ernie/config.js';

/**
 * The Qwen3-VL vision tower's hyperparameters (HF 5.17 Qwen3VLVisionConfig, Qwen3VLMoeVisionConfig:
 * the same fields; vLLM Qwen3_VisionTransformer), every default resolved.
 */
export interface Qwen3VlVisionConfig extends VisionBlockConfig {
  depth: number;
  patchSize: number;
  /** Frames per temporal patch (2): one row of pixel_values holds C * temporalPatchSize * p * p values. */
  temporalPatchSize: number;
  inChannels: number;
  /** D: the mergers' output width, the text model's hidden size. */
  outHiddenSize: number;
  /** Rows of the learned position table `pos_embed`: a square grid of positionGridSide^2 (2304 = 48^2). */
  numPositionEmbeddings: number;
  /** int(sqrt(numPositionEmbeddings)) as HF computes it: the side of the grid interpolated to each image. */
  positionGridSide: number;
  /** The blocks whose outputs feed the deepstack mergers, in `deepstack_merger_list` order. */
  deepstackVisualIndexes: number[];
  /** Epsilon of the mergers' norm (their GELU is exact whatever hiddenAct says: HF Qwen3VLVisionPatchMerger's nn.GELU()). */
  mergerNormEps: number;
}

/** Where the defaults come from (transformers 5.17 configuration_qwen3_vl.py). */
const HF = 'HF Qwen3VLVisionConfig';

/** HF Qwen3VLVisionBlock and Qwen3VLVisionPatchMerger: nn.LayerNorm(..., eps=1e-6), not configurable (vLLM the same). */
const LAYER_NORM_EPS = 1e-6;

/** Head size Dv / heads. */
export function qwen3VlVisionHeadDim(config: Pick<Qwen3VlVisionConfig, 'hiddenSize' | 'numHeads'>): number {
  return config.hiddenSize / config.numHeads;
}

/** Values of one row of pixel_values: C * temporal patch * p * p (3 * 2 * 16 * 16 = 1536). */
export function qwen3VlPatchDim(config: Pick<Qwen3VlVisionConfig, 'inChannels' | 'temporalPatchSize' | 'patchSize'>): number {
  return config.inChannels * config.temporalPatchSize * config.patchSize ** 2;
}

/**
 * Reads the tower's config from a Qwen3-VL / Qwen3-VL-MoE config.json (its `vision_config`) or from a
 * bare vision_config object. Absent fields take HF's defaults, as transformers does. Throws `ConfigError`
 * (from @vlmkit/config) naming the field.
 */
function fromHfConfig(json: unknown): Qwen3VlVisionConfig {
  const top = fields(json, 'Qwen3-VL vision config');
  return fromFields(top.has('vision_config') ? top.obj('vision_config') : fields(json, top.config, 'vision_config'));
}

/** The tower's config from its `vision_config` object (a family config reads the file once and hands it over). */
function fromFields(vc: ConfigObject): Qwen3VlVisionConfig {
  if (vc.has('model_type')) vc.oneOf('model_type', ['qwen3_vl_vision', 'qwen3_vl_moe_vision'], { code: 'UNSUPPORTED_CONFIG' });
  const depth = vc.int('depth', { default: 27, from: HF });
  const hiddenSize = vc.int('hidden_size', { default: 1152, from: HF });
  // HF attribute_map: num_attention_heads is an alias of num_heads.
  const headsKey = !vc.has('num_heads') && vc.has('num_attention_heads') ? 'num_attention_heads' : 'num_heads';
  const numHeads = vc.int(headsKey, { default: 16, from: HF });
  const headDim = hiddenSize / numHeads;
  if (!Number.isInteger(headDim) || headDim % 4 !== 0) {
    vc.fail(
      'INCONSISTENT_CONFIG',
      headsKey,
      `${numHeads} must split hidden_size ${hiddenSize} into an integer head size divisible by 4 (the 2D rotary splits it into h and w halves), found ${headDim}.`,
    );
  }
  const rope = vc.optionalObj('rope_parameters');
  rope?.oneOf('rope_type', ['axial'], {
    default: 'axial',
    from: `${HF}.default_rope_type`,
    code: 'UNSUPPORTED_CONFIG',
    why: 'HF Qwen3VLVisionRotaryEmbedding supports only the axial 2D rotary.',
  });
  // HF 5.17 writes rope_parameters; older files may carry a bare rope_theta; neither: HF's vision default 10000.
  const ropeTheta =
    rope?.optionalPositive('rope_theta') ?? vc.positive('rope_theta', { default: 10000, from: 'HF Qwen3VLVisionConfig rope_parameters' });

  const numPositionEmbeddings = vc.int('num_position_embeddings', { default: 2304, from: HF });
  const deepstackVisualIndexes = vc.ints('deepstack_visual_indexes', { min: 0, default: [8, 16, 24], from: HF });
  for (const [i, layer] of deepstackVisualIndexes.entries()) {
    if (layer >= depth) {
      vc.fail(
        'INCONSISTENT_CONFIG',
        'deepstack_visual_indexes',
        `[${i}] is ${layer}, but the tower has depth ${depth} (blocks 0..${depth - 1}).`,
      );
    }
    if (deepstackVisualIndexes.indexOf(layer) !== i) {
      vc.fail('INCONSISTENT_CONFIG', 'deepstack_visual_indexes', `lists block ${layer} twice; each deepstack merger reads its own block.`);
    }
  }
  return {
    depth,
    hiddenSize,
    numHeads,
    intermediateSize: vc.int('intermediate_size', { default: 4304, from: HF }),
    hiddenAct: vc.oneOf('hidden_act', VISION_ACTIVATIONS, { default: 'gelu_pytorch_tanh', from: HF, code: 'UNSUPPORTED_CONFIG' }),
    patchSize: vc.square('patch_size', { default: 16, from: HF }),
    temporalPatchSize: vc.int('temporal_patch_size', { default: 2, from: HF }),
    inChannels: vc.int('in_channels', { default: 3, from: HF }),
    spatialMergeSize: vc.int('spatial_merge_size', { default: 2, from: HF }),
    outHiddenSize: vc.int('out_hidden_size', { default: 3584, from: HF }),
    numPositionEmbeddings,
    // HF Qwen3VLVisionModel: int(config.num_position_embeddings**0.5).
    positionGridSide: Math.floor(Math.sqrt(numPositionEmbeddings)),
    deepstackVisualIndexes,
    ropeTheta,
    blockNormEps: LAYER_NORM_EPS,
    mergerNormEps: LAYER_NORM_EPS,
  };
}

/** `Qwen3VlVisionConfig.fromHfConfig(json)`, `.fromFields(visionConfig)`: the config type's companion. */
export const Qwen3VlVisionConfig = { fromHfConfig, fromFields } as const;
