/**
 * The parts of a Granite 4 Vision config.json the mapper needs (HF 5.17's
 * `granite4_vision`: text_config, vision_config (SigLIP), qformer_config,
 * deepstack_layer_map, downsample_rate). The text model may be HF's
 * `granite4_vision_text` or the hub's `granitemoehybrid` (attention layers
 * only; its MLP is `shared_mlp` with `shared_intermediate_size`).
 */
import { MappingError } from './errors.js';

export interface Granite4VisionMapperConfig {
  readonly text: {
    readonly layers: number;
    readonly hidden: number;
    readonly heads: number;
    readonly kvHeads: number;
    readonly headDim: number;
    readonly intermediate: number;
    readonly vocab: number;
    readonly tieWordEmbeddings: boolean;
    readonly attentionBias: boolean;
    readonly mlpBias: boolean;
  };
  readonly vision: {
    readonly layers: number;
    readonly hidden: number;
    readonly intermediate: number;
    readonly patchSize: number;
    readonly channels: number;
    readonly imageSize: number;
  };
  readonly qformer: {
    readonly layers: number;
    readonly hidden: number;
    readonly intermediate: number;
    readonly encoderHidden: number;
    readonly crossAttentionFrequency: number;
  };
  /** Query window side and key window side, from downsample_rate "q/k". */
  readonly querySide: number;
  readonly windowSide: number;
  readonly layerwiseProjectors: number;
  readonly spatialProjectors: number;
  readonly imageNewline: boolean;
}

type Json = Record<string, unknown>;

export function granite4VisionConfigFromHf(json: unknown): Granite4VisionMapperConfig {
  const root = obj(json, 'config.json');
  const t = obj(root['text_config'], 'text_config');
  const v = obj(root['vision_config'], 'vision_config');
  const tp = 'text_config.';
  const vp = 'vision_config.';

  const layers = int(t, 'num_hidden_layers', tp);
  const layerTypes = t['layer_types'] ?? t['layers_block_type'];
  if (Array.isArray(layerTypes) && layerTypes.some((x) => x !== 'attention' && x !== 'full_attention')) {
    bad(
      `${tp}layer_types has non-attention (mamba) layers, ${JSON.stringify(layerTypes)}; only all-attention Granite decoders are supported`,
    );
  }
  if ((t['num_local_experts'] ?? 0) !== 0)
    bad(`${tp}num_local_experts is ${String(t['num_local_experts'])}; MoE Granite decoders are not supported`);
  const hidden = int(t, 'hidden_size', tp);
  const heads = int(t, 'num_attention_heads', tp);
  const headDim = t['head_dim'] === undefined ? hidden / heads : int(t, 'head_dim', tp);
  if (!Number.isInteger(headDim)) bad(`${tp}hidden_size ${hidden} is not a multiple of num_attention_heads ${heads}`);

  const vHidden = int(v, 'hidden_size', vp);
  const q =
    root['qformer_config'] === undefined || root['qformer_config'] === null ? undefined : obj(root['qformer_config'], 'qformer_config');
  const qp = 'qformer_config.';
  // HF: a missing qformer_config is derived from the vision tower (Granite4VisionConfig.__post_init__).
  const qformer =
    q === undefined
      ? { layers: 1, hidden: vHidden, intermediate: 3072, encoderHidden: vHidden, crossAttentionFrequency: 1 }
      : {
          layers: int(q, 'num_hidden_layers', qp),
          hidden: int(q, 'hidden_size', qp),
          intermediate: int(q, 'intermediate_size', qp),
          encoderHidden: int(q, 'encoder_hidden_size', qp, vHidden),
          crossAttentionFrequency: int(q, 'cross_attention_frequency', qp, 1),
        };
  if (qformer.crossAttentionFrequency <= 0) bad(`${qp}cross_attention_frequency must be positive`);

  const rate = root['downsample_rate'];
  const m = typeof rate === 'string' ? /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(rate) : null;
  if (m === null) bad(`expected downsample_rate to be a string "q/k" (query window side / key window side), found ${JSON.stringify(rate)}`);
  const map = root['deepstack_layer_map'];
  if (!Array.isArray(map))
    bad(`expected deepstack_layer_map to be a list of [vision_layer, llm_layer] pairs, found ${JSON.stringify(map)}`);

  return {
    text: {
      layers,
      hidden,
      heads,
      kvHeads: t['num_key_value_heads'] === undefined ? heads : int(t, 'num_key_value_heads', tp),
      headDim,
      // granitemoehybrid's dense MLP is shared_mlp, sized by shared_intermediate_size.
      intermediate: t['shared_intermediate_size'] !== undefined ? int(t, 'shared_intermediate_size', tp) : int(t, 'intermediate_size', tp),
      vocab: int(t, 'vocab_size', tp),
      tieWordEmbeddings: bool(root, 'tie_word_embeddings', bool(t, 'tie_word_embeddings', false)),
      attentionBias: bool(t, 'attention_bias', false),
      mlpBias: bool(t, 'mlp_bias', false),
    },
    vision: {
      layers: int(v, 'num_hidden_layers', vp),
      hidden: vHidden,
      intermediate: int(v, 'intermediate_size', vp),
      patchSize: int(v, 'patch_size', vp),
      channels: int(v, 'num_channels', vp, 3),
      imageSize: int(v, 'image_size', vp),
    },
    qformer,
    querySide: Number(m[1]),
    windowSide: Number(m[2]),
    layerwiseProjectors: map.length,
    // HF always builds the 4 spatial projectors; vLLM only with use_spatial_sampling.
    spatialProjectors: bool(root, 'use_spatial_sampling', true) ? 4 : 0,
    imageNewline: bool(root, 'use_image_newline_parameter', true),
  };
}

function bad(msg: string): never {
  throw new MappingError('CONFIG_INVALID', `Granite 4 Vision config.json: ${msg}.`);
}

function obj(x: unknown, what: string): Json {
  if (typeof x !== 'object' || x === null || Array.isArray(x))
    bad(`expected ${what} to be an object, found ${JSON.stringify(x) ?? 'nothing'}`);
  return x as Json;
}

function int(o: Json, key: string, at: string, dflt?: number): number {
  const x = o[key] ?? dflt;
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0)
    bad(`expected ${at}${key} to be a non-negative integer, found ${JSON.stringify(x) ?? 'nothing'}`);
  return x;
}

function bool(o: Json, key: string, dflt: boolean): boolean {
  const x = o[key] ?? dflt;
  if (typeof x !== 'boolean') bad(`expected ${key} to be true or false, found ${JSON.stringify(x)}`);
  return x;
}
