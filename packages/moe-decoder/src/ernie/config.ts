import { MoeDecoderError } from '../errors.js';

/** Which feed-forward a decoder layer has: a dense SiLU MLP or the modality-isolated MoE. */
export type ErnieMlpType = 'dense' | 'sparse';

/**
 * The ERNIE-4.5-VL text decoder (Ernie4_5_VLMoeForCausalLM), validated and
 * with every default resolved. `fromHfConfig` reads HF transformers 5.17's
 * layout (`text_config`, `rope_parameters.mrope_section`, `mlp_layer_types`)
 * and Baidu's original hub layout (`freq_allocation`,
 * `moe_layer_start_index` / `end_index` / `interval`).
 */
export interface ErnieTextConfig {
  hiddenSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
  vocabSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  /** How many of the last headDim/2 rotary frequencies follow the t position (vLLM freq_allocation; HF mrope_section[2]). */
  freqAllocation: number;
  /** Dense MLP intermediate size (layers that are not MoE). */
  intermediateSize: number;
  /** Per layer: 'dense' or 'sparse' (MoE with text and vision experts). */
  mlpLayerTypes: ErnieMlpType[];
  moe: {
    /** Routed experts per modality: [text, vision]. */
    numExperts: [number, number];
    /** Experts chosen per token (moe_k). */
    topK: number;
    /** Expert intermediate size per modality: [text, vision]. */
    intermediateSize: [number, number];
    /** Shared experts, fused into one MLP of intermediateSize[0] * numShared (0: none). */
    numSharedExperts: number;
    /** Lower clamp of the routing-weight sum (HF Ernie4_5_VLMoeMoeTopKRouter). */
    normMin: number;
  };
  /** lm_head shares embed_tokens' weight. */
  tieWordEmbeddings: boolean;
}

type Json = Record<string, unknown>;

function fail(message: string): never {
  throw new MoeDecoderError('INVALID_CONFIG', `ERNIE text config: ${message}`);
}

function int(j: Json, key: string, opts: { min?: number; fallback?: number } = {}): number {
  const v = j[key] ?? opts.fallback;
  if (v === undefined) fail(`'${key}' is missing; expected an integer.`);
  if (typeof v !== 'number' || !Number.isInteger(v)) fail(`'${key}' must be an integer, found ${JSON.stringify(v)}.`);
  if (v < (opts.min ?? 1)) fail(`'${key}' must be at least ${opts.min ?? 1}, found ${v}.`);
  return v;
}

function num(j: Json, key: string, fallback?: number): number {
  const v = j[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) fail(`'${key}' must be a positive number, found ${JSON.stringify(v)}.`);
  return v;
}

/** An int or a [text, vision] pair (Baidu writes lists, HF 5.17 one int for both). */
function pair(j: Json, key: string, fallback?: number | number[]): [number, number] {
  const v = j[key] ?? fallback;
  const list = typeof v === 'number' ? [v, v] : v;
  if (
    !Array.isArray(list) ||
    list.length < 1 ||
    list.length > 2 ||
    list.some((x) => typeof x !== 'number' || !Number.isInteger(x) || x < 0)
  ) {
    fail(`'${key}' must be a non-negative integer or a list [text, vision] of them, found ${JSON.stringify(v)}.`);
  }
  return [list[0] as number, (list[1] ?? list[0]) as number];
}

/**
 * Reads an HF `config.json` (the whole VL config with `text_config`, or the
 * text config alone, HF 5.17 or Baidu layout) into an `ErnieTextConfig`.
 * Throws `MoeDecoderError` ('INVALID_CONFIG' or 'UNSUPPORTED_CONFIG') naming the field.
 */
export function ernieTextConfigFromHf(json: unknown): ErnieTextConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) fail('expected a JSON object.');
  const top = json as Json;
  const tc = top['text_config'];
  if (tc !== undefined && (typeof tc !== 'object' || tc === null)) fail(`'text_config' must be an object.`);
  const j: Json = tc === undefined ? top : (tc as Json);

  const hiddenSize = int(j, 'hidden_size');
  const numHiddenLayers = int(j, 'num_hidden_layers');
  const numAttentionHeads = int(j, 'num_attention_heads');
  const numKeyValueHeads = int(j, 'num_key_value_heads', { fallback: numAttentionHeads });
  if (numAttentionHeads % numKeyValueHeads !== 0) {
    fail(`num_attention_heads (${numAttentionHeads}) must be a multiple of num_key_value_heads (${numKeyValueHeads}).`);
  }
  const headDim = j['head_dim'] == null ? hiddenSize / numAttentionHeads : int(j, 'head_dim');
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) fail(`head_dim must be an even integer, found ${headDim}.`);
  const half = headDim / 2;

  const act = j['hidden_act'] ?? 'silu';
  if (act !== 'silu')
    throw new MoeDecoderError(
      'UNSUPPORTED_CONFIG',
      `ERNIE text config: hidden_act '${String(act)}' is not supported; the decoder builds SiLU-gated MLPs.`,
    );
  if (j['use_bias'] === true)
    throw new MoeDecoderError(
      'UNSUPPORTED_CONFIG',
      'ERNIE text config: use_bias=true is not supported; ERNIE-4.5-VL checkpoints have no projection biases.',
    );

  // Rotary: HF keeps theta and mrope_section [h, w, t] in rope_parameters; Baidu has rope_theta and freq_allocation.
  const rp = (j['rope_parameters'] ?? j['rope_scaling'] ?? {}) as Json;
  const ropeType = rp['rope_type'] ?? rp['type'] ?? 'default';
  if (ropeType !== 'default')
    throw new MoeDecoderError(
      'UNSUPPORTED_CONFIG',
      `ERNIE text config: rope_type '${String(ropeType)}' is not supported; ERNIE uses 'default'.`,
    );
  const ropeTheta = num(rp['rope_theta'] !== undefined ? rp : j, 'rope_theta', 500000);
  let freqAllocation: number;
  if (rp['mrope_section'] !== undefined) {
    const s = rp['mrope_section'];
    if (!Array.isArray(s) || s.length !== 3 || s.some((x) => !Number.isInteger(x) || x < 0))
      fail(`rope_parameters.mrope_section must be three non-negative integers [h, w, t], found ${JSON.stringify(s)}.`);
    const [h, w, t] = s as number[];
    if (h !== w || h! + w! + t! !== half)
      fail(`rope_parameters.mrope_section [${s.join(', ')}] must be [n, n, t] with 2n + t = head_dim / 2 = ${half}.`);
    freqAllocation = t!;
  } else {
    // HF's default mrope_section is [22, 22, 20]; vLLM's default freq_allocation is 20.
    freqAllocation = int(j, 'freq_allocation', { min: 0, fallback: 20 });
  }
  if (freqAllocation > half || (half - freqAllocation) % 2 !== 0) {
    fail(`freq_allocation ${freqAllocation} must leave an even number of the head_dim / 2 = ${half} frequencies for h and w.`);
  }

  const numExperts = pair(j, 'moe_num_experts', 64);
  const intermediateSize = pair(j, 'moe_intermediate_size', [1536, 512]);
  const topK = int(j, 'moe_k', { fallback: 6 });
  const numSharedExperts = int(j, 'moe_num_shared_experts', { min: 0, fallback: 2 });
  const normMin = num(j, 'moe_norm_min', 1e-12);
  const mlpLayerTypes = resolveLayerTypes(j, numHiddenLayers);
  if (mlpLayerTypes.includes('sparse')) {
    for (const [m, n] of [
      ['text', numExperts[0]],
      ['vision', numExperts[1]],
    ] as const) {
      if (n < topK) fail(`moe_k (${topK}) exceeds the ${n} ${m} experts.`);
    }
    if (intermediateSize[0] < 1 || intermediateSize[1] < 1)
      fail(`moe_intermediate_size must be positive, found [${intermediateSize.join(', ')}].`);
  }
  const tie = j['tie_word_embeddings'] ?? top['tie_word_embeddings'] ?? true;
  if (typeof tie !== 'boolean') fail(`'tie_word_embeddings' must be a boolean, found ${JSON.stringify(tie)}.`);

  return {
    hiddenSize,
    numHiddenLayers,
    numAttentionHeads,
    numKeyValueHeads,
    headDim,
    vocabSize: int(j, 'vocab_size'),
    rmsNormEps: num(j, 'rms_norm_eps', 1e-5),
    ropeTheta,
    freqAllocation,
    intermediateSize: int(j, 'intermediate_size'),
    mlpLayerTypes,
    moe: { numExperts, topK, intermediateSize, numSharedExperts, normMin },
    tieWordEmbeddings: tie,
  };
}

/**
 * HF 5.17: `mlp_layer_types`. Baidu / vLLM: a layer is MoE when
 * (i + 1) % interval == 0 and min(start) <= i <= max(end)
 * (vLLM Ernie4_5_VLMoeDecoderLayer). Inside an MoE layer vLLM swaps a
 * modality whose range does not cover i for a dense MLP; no released
 * checkpoint needs that, so it is refused rather than guessed.
 */
function resolveLayerTypes(j: Json, layers: number): ErnieMlpType[] {
  const given = j['mlp_layer_types'];
  if (given !== undefined) {
    if (!Array.isArray(given) || given.length !== layers || given.some((t) => t !== 'dense' && t !== 'sparse')) {
      fail(`mlp_layer_types must list 'dense' or 'sparse' for each of the ${layers} layers, found ${JSON.stringify(given)}.`);
    }
    return given as ErnieMlpType[];
  }
  if (j['moe_layer_start_index'] === undefined) return Array.from({ length: layers }, (_, i) => (i === 0 ? 'dense' : 'sparse'));
  const start = pair(j, 'moe_layer_start_index');
  const end = pair(j, 'moe_layer_end_index', [layers - 1, layers - 1]);
  const interval = int(j, 'moe_layer_interval', { fallback: 1 });
  return Array.from({ length: layers }, (_, i) => {
    const moe = (i + 1) % interval === 0 && i >= Math.min(...start) && i <= Math.max(...end);
    if (!moe) return 'dense';
    const text = i >= start[0] && i <= end[0];
    const vision = i >= start[1] && i <= end[1];
    if (!text || !vision) {
      throw new MoeDecoderError(
        'UNSUPPORTED_CONFIG',
        `ERNIE text config: layer ${i} is an MoE layer with only ${text ? 'text' : 'vision'} experts (moe_layer_start_index [${start.join(', ')}], end [${end.join(', ')}]); mixed MoE/dense modalities in one layer are not supported.`,
      );
    }
    return 'sparse';
  });
}
