/**
 * The parts of an ERNIE-4.5-VL config.json the mapper needs: sizes for the
 * expected shapes, and which decoder layers hold experts of which modality.
 * Reads both layouts on the hub: Baidu's original flat config
 * (`moe_num_experts: [64, 64]`, `moe_layer_start_index`, `vision_config.embed_dim`,
 * `pixel_hidden_size`) and HF transformers 5.17's (`text_config`,
 * `mlp_layer_types`, `vision_config.hidden_size`).
 */
import { MappingError } from './errors.js';

/** A decoder layer's MLP: dense, or MoE with text and/or vision experts. */
export type ErnieMlpKind = { readonly kind: 'dense' } | { readonly kind: 'moe'; readonly text: boolean; readonly vision: boolean };

export interface Ernie45VlMapperConfig {
  readonly text: {
    readonly layers: number;
    readonly hidden: number;
    readonly heads: number;
    readonly kvHeads: number;
    readonly headDim: number;
    readonly intermediate: number;
    readonly vocab: number;
    readonly tieWordEmbeddings: boolean;
    readonly useBias: boolean;
    /** [text, vision]. */
    readonly experts: readonly [number, number];
    /** [text, vision]. */
    readonly moeIntermediate: readonly [number, number];
    readonly sharedExperts: number;
    readonly mlp: readonly ErnieMlpKind[];
  };
  readonly vision: {
    readonly depth: number;
    readonly hidden: number;
    readonly intermediate: number;
    readonly patchSize: number;
    readonly inChannels: number;
    readonly spatialMerge: number;
    readonly temporalMerge: number;
  };
}

type Json = Record<string, unknown>;

export function ernie45VlConfigFromHf(json: unknown): Ernie45VlMapperConfig {
  const root = obj(json, 'config.json');
  const hf = root['text_config'] !== undefined;
  const t = hf ? obj(root['text_config'], 'text_config') : root;
  const tp = hf ? 'text_config.' : '';
  const v = obj(root['vision_config'], 'vision_config');

  const layers = int(t, 'num_hidden_layers', tp);
  const hidden = int(t, 'hidden_size', tp);
  const heads = int(t, 'num_attention_heads', tp);
  const kvHeads = t['num_key_value_heads'] === undefined ? heads : int(t, 'num_key_value_heads', tp);
  const headDim = t['head_dim'] === undefined || t['head_dim'] === null ? hidden / heads : int(t, 'head_dim', tp);
  if (!Number.isInteger(headDim)) bad(`${tp}hidden_size ${hidden} is not a multiple of num_attention_heads ${heads}; set head_dim`);
  const experts = pair(t, 'moe_num_experts', tp, 0);
  const moeIntermediate = pair(t, 'moe_intermediate_size', tp, 0);
  const mlp = hf ? hfLayerTypes(t, layers, tp) : baiduLayerTypes(t, layers, experts);
  if (mlp.some((m) => m.kind === 'moe') && (experts[0] <= 0 || experts[1] <= 0))
    bad(`${tp}moe_num_experts must be positive for MoE layers, found ${JSON.stringify(t['moe_num_experts'])}`);

  const vHidden = hf ? int(v, 'hidden_size', 'vision_config.') : int(v, 'embed_dim', 'vision_config.');
  const vIntermediate = hf ? int(v, 'intermediate_size', 'vision_config.') : Math.round(vHidden * num(v, 'mlp_ratio', 'vision_config.'));
  const spatialMerge = hf
    ? int(v, 'spatial_merge_size', 'vision_config.', 2)
    : int(root, 'spatial_conv_size', '', int(v, 'spatial_merge_size', 'vision_config.', 2));
  const temporalMerge = hf ? int(v, 'temporal_merge_size', 'vision_config.', 2) : int(root, 'temporal_conv_size', '', 2);
  if (!hf && root['pixel_hidden_size'] !== undefined && int(root, 'pixel_hidden_size', '') !== vHidden) {
    bad(
      `pixel_hidden_size ${String(root['pixel_hidden_size'])} differs from vision_config.embed_dim ${vHidden}; the resampler takes the tower's output`,
    );
  }
  return {
    text: {
      layers,
      hidden,
      heads,
      kvHeads,
      headDim,
      intermediate: int(t, 'intermediate_size', tp),
      vocab: int(t, 'vocab_size', tp),
      tieWordEmbeddings: bool(root, 'tie_word_embeddings', bool(t, 'tie_word_embeddings', true)),
      useBias: bool(t, 'use_bias', false),
      experts,
      moeIntermediate,
      sharedExperts: int(t, 'moe_num_shared_experts', tp, 0),
      mlp,
    },
    vision: {
      depth: int(v, 'depth', 'vision_config.'),
      hidden: vHidden,
      intermediate: vIntermediate,
      patchSize: int(v, 'patch_size', 'vision_config.', 14),
      inChannels: int(v, 'in_channels', 'vision_config.', 3),
      spatialMerge,
      temporalMerge,
    },
  };
}

/** HF 5.17: `mlp_layer_types` of 'dense' | 'sparse'; a sparse layer holds both modalities' experts. */
function hfLayerTypes(t: Json, layers: number, tp: string): ErnieMlpKind[] {
  const types = t['mlp_layer_types'] ?? ['dense', ...Array<string>(layers - 1).fill('sparse')];
  if (!Array.isArray(types) || types.length !== layers || types.some((x) => x !== 'dense' && x !== 'sparse')) {
    bad(`${tp}mlp_layer_types must list 'dense' or 'sparse' for each of the ${layers} layers, found ${JSON.stringify(types)}`);
  }
  return (types as string[]).map((x) => (x === 'dense' ? { kind: 'dense' } : { kind: 'moe', text: true, vision: true }));
}

/**
 * Baidu / vLLM: a layer is MoE when (i + 1) % moe_layer_interval == 0 and
 * min(start) <= i <= max(end); inside it, text experts exist for
 * start[0] <= i <= end[0] and vision experts for start[1] <= i <= end[1].
 * vLLM: Ernie4_5_VLMoeDecoderLayer / Ernie4_5_VLMoeMoE.__init__.
 */
function baiduLayerTypes(t: Json, layers: number, experts: readonly [number, number]): ErnieMlpKind[] {
  const start = pair(t, 'moe_layer_start_index', '', 0);
  const end = t['moe_layer_end_index'] === undefined ? ([layers - 1, layers - 1] as const) : pair(t, 'moe_layer_end_index', '', 0);
  const interval = int(t, 'moe_layer_interval', '', 1);
  if (interval <= 0) bad(`moe_layer_interval must be positive, found ${interval}`);
  const useMoe = bool(t, 'use_moe', Math.max(...experts) > 0);
  return Array.from({ length: layers }, (_, i): ErnieMlpKind => {
    const moe = useMoe && (i + 1) % interval === 0 && i >= Math.min(...start) && i <= Math.max(...end);
    if (!moe) return { kind: 'dense' };
    return { kind: 'moe', text: start[0] <= i && i <= end[0], vision: start[1] <= i && i <= end[1] };
  });
}

function bad(msg: string): never {
  throw new MappingError('CONFIG_INVALID', `ERNIE-4.5-VL config.json: ${msg}.`);
}

function obj(x: unknown, what: string): Json {
  if (typeof x !== 'object' || x === null || Array.isArray(x))
    bad(`expected ${what} to be an object, found ${JSON.stringify(x) ?? 'nothing'}`);
  return x as Json;
}

function num(o: Json, key: string, at: string, dflt?: number): number {
  const x = o[key] ?? dflt;
  if (typeof x !== 'number' || !Number.isFinite(x)) bad(`expected ${at}${key} to be a number, found ${JSON.stringify(x) ?? 'nothing'}`);
  return x;
}

function int(o: Json, key: string, at: string, dflt?: number): number {
  const x = num(o, key, at, dflt);
  if (!Number.isSafeInteger(x) || x < 0) bad(`expected ${at}${key} to be a non-negative integer, found ${x}`);
  return x;
}

function bool(o: Json, key: string, dflt: boolean): boolean {
  const x = o[key] ?? dflt;
  if (typeof x !== 'boolean') bad(`expected ${key} to be true or false, found ${JSON.stringify(x)}`);
  return x;
}

/** `[text, vision]` from a pair or one number for both (HF stores moe_num_experts as one int). */
function pair(o: Json, key: string, at: string, dflt: number): readonly [number, number] {
  const x = o[key] ?? dflt;
  const ok = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  if (ok(x)) return [x, x];
  if (Array.isArray(x) && x.length === 2 && ok(x[0]) && ok(x[1])) return [x[0], x[1]];
  return bad(`expected ${at}${key} to be a non-negative integer or a [text, vision] pair, found ${JSON.stringify(x)}`);
}
