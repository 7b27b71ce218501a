import { MoeDecoderError } from '../errors.js';

/**
 * The dense Granite text decoder of Granite 4 Vision (HF 5.17
 * `Granite4VisionTextModel` + `lm_head`; vLLM `GraniteModel` /
 * `Granite4VisionLLMModel`), validated, every default resolved.
 */
export interface GraniteTextConfig {
  hiddenSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
  /** MLP intermediate size (granitemoehybrid: shared_intermediate_size, the size of its `shared_mlp`). */
  intermediateSize: number;
  vocabSize: number;
  rmsNormEps: number;
  /** Standard 1D RoPE over the whole head (neox halves). */
  ropeTheta: number;
  /** Input embeddings are multiplied by this. */
  embeddingMultiplier: number;
  /** The attention softmax scale itself (not 1/sqrt(headDim)). */
  attentionMultiplier: number;
  /** Each branch (attention, MLP) is multiplied by this before its residual add. */
  residualMultiplier: number;
  /** Logits are divided by this. */
  logitsScaling: number;
  /** lm_head shares embed_tokens' weight. */
  tieWordEmbeddings: boolean;
  /** q/k/v/o projections have biases. */
  attentionBias: boolean;
  /** gate_up/down projections have biases. */
  mlpBias: boolean;
}

type Json = Record<string, unknown>;

const WHAT = 'Granite text config';

function fail(message: string): never {
  throw new MoeDecoderError('INVALID_CONFIG', `${WHAT}: ${message}`);
}

function unsupported(message: string): never {
  throw new MoeDecoderError('UNSUPPORTED_CONFIG', `${WHAT}: ${message}`);
}

function int(j: Json, key: string, fallback?: number): number {
  const v = j[key] ?? fallback;
  if (v === undefined) fail(`'${key}' is missing; expected a positive integer.`);
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) fail(`'${key}' must be a positive integer, found ${JSON.stringify(v)}.`);
  return v;
}

function num(j: Json, key: string, fallback: number): number {
  const v = j[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(`'${key}' must be a positive number, found ${JSON.stringify(v)}.`);
  return v;
}

function bool(j: Json, key: string, fallback: boolean): boolean {
  const v = j[key] ?? fallback;
  if (typeof v !== 'boolean') fail(`'${key}' must be true or false, found ${JSON.stringify(v)}.`);
  return v;
}

const TEXT_MODEL_TYPES = ['granite4_vision_text', 'granitemoehybrid', 'granite'];

/**
 * Reads a Granite 4 Vision `config.json` (its `text_config`) or a text config
 * alone: HF 5.17's `granite4_vision_text`, the hub's `granitemoehybrid`
 * (every layer attention, no routed experts) or plain `granite`. Defaults
 * are HF's. Throws `MoeDecoderError` ('INVALID_CONFIG' / 'UNSUPPORTED_CONFIG')
 * naming the field.
 *
 * RoPE is always on: HF's Granite4VisionTextModel and vLLM's GraniteModel
 * apply it whatever granitemoehybrid's `position_embedding_type` says.
 */
export function graniteTextConfigFromHf(json: unknown): GraniteTextConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) fail('expected a JSON object.');
  const top = json as Json;
  const tc = top['text_config'];
  if (tc !== undefined && (typeof tc !== 'object' || tc === null || Array.isArray(tc))) fail(`'text_config' must be an object.`);
  const j: Json = tc === undefined ? top : (tc as Json);

  const type = j['model_type'] ?? 'granite4_vision_text';
  if (typeof type !== 'string' || !TEXT_MODEL_TYPES.includes(type)) {
    unsupported(`model_type ${JSON.stringify(type)} is not a dense Granite decoder; expected one of ${TEXT_MODEL_TYPES.join(', ')}.`);
  }
  const layerTypes = j['layer_types'] ?? j['layers_block_type'];
  if (layerTypes !== undefined && layerTypes !== null) {
    if (!Array.isArray(layerTypes)) fail(`'layer_types' must be a list, found ${JSON.stringify(layerTypes)}.`);
    const bad = layerTypes.findIndex((t) => t !== 'attention' && t !== 'full_attention');
    if (bad >= 0)
      unsupported(
        `layer_types[${bad}] is ${JSON.stringify(layerTypes[bad])}; only all-attention Granite decoders are built (no mamba layers).`,
      );
  }
  if (typeof j['num_local_experts'] === 'number' && j['num_local_experts'] > 0 && type === 'granitemoehybrid') {
    unsupported(`num_local_experts is ${j['num_local_experts']}; only dense Granite decoders are built (no routed experts).`);
  }
  const act = j['hidden_act'] ?? 'silu';
  if (act !== 'silu') unsupported(`hidden_act '${String(act)}' is not supported; the decoder builds SiLU-gated MLPs.`);

  const hiddenSize = int(j, 'hidden_size');
  const numHiddenLayers = int(j, 'num_hidden_layers');
  const numAttentionHeads = int(j, 'num_attention_heads');
  const numKeyValueHeads = int(j, 'num_key_value_heads', numAttentionHeads);
  if (numAttentionHeads % numKeyValueHeads !== 0) {
    fail(`num_attention_heads (${numAttentionHeads}) must be a multiple of num_key_value_heads (${numKeyValueHeads}).`);
  }
  const headDim = j['head_dim'] == null ? hiddenSize / numAttentionHeads : int(j, 'head_dim');
  if (!Number.isInteger(headDim) || headDim % 2 !== 0)
    fail(`head_dim (or hidden_size / num_attention_heads) must be an even integer, found ${headDim}.`);
  if (Array.isArray(layerTypes) && layerTypes.length !== numHiddenLayers)
    fail(`'layer_types' has ${layerTypes.length} entries for ${numHiddenLayers} layers.`);

  // HF 5.17 keeps theta in rope_parameters; older hub files have rope_theta and rope_scaling at the top.
  const rp = (j['rope_parameters'] ?? j['rope_scaling'] ?? {}) as Json;
  if (typeof rp !== 'object' || rp === null) fail(`'rope_parameters' must be an object.`);
  const ropeType = rp['rope_type'] ?? rp['type'] ?? 'default';
  if (ropeType !== 'default') unsupported(`rope_type '${String(ropeType)}' is not supported; Granite 4 Vision uses 'default'.`);
  const ropeTheta = num(rp['rope_theta'] !== undefined ? rp : j, 'rope_theta', 10000);

  const intermediateSize = j['shared_intermediate_size'] !== undefined ? int(j, 'shared_intermediate_size') : int(j, 'intermediate_size');
  return {
    hiddenSize,
    numHiddenLayers,
    numAttentionHeads,
    numKeyValueHeads,
    headDim,
    intermediateSize,
    vocabSize: int(j, 'vocab_size'),
    rmsNormEps: num(j, 'rms_norm_eps', 1e-6),
    ropeTheta,
    embeddingMultiplier: num(j, 'embedding_multiplier', 1),
    attentionMultiplier: num(j, 'attention_multiplier', 1),
    residualMultiplier: num(j, 'residual_multiplier', 1),
    logitsScaling: num(j, 'logits_scaling', 1),
    tieWordEmbeddings: bool(top, 'tie_word_embeddings', bool(j, 'tie_word_embeddings', false)),
    attentionBias: bool(j, 'attention_bias', false),
    mlpBias: bool(j, 'mlp_bias', false),
  };
}
