import type { ParameterSpec } from '../types.js';
import type { GraniteTextConfig } from './config.js';

/**
 * The parameters `buildGraniteTextDecoder` reads, under vLLM GraniteModel's
 * module names with its packed `qkv_proj` (q rows, then k, then v) and
 * `mlp.gate_up_proj` (gate rows, then up): exactly what
 * @vlmkit/weight-mapper's `mapGranite4Vision` emits as `decoder`. Biases
 * only with `attentionBias` / `mlpBias`. `lm_head.weight` is listed as the
 * mapper supplies it; with tied embeddings the head reads
 * `embed_tokens.weight` instead (stored once).
 */
export function graniteTextExpectedParameters(config: GraniteTextConfig): ParameterSpec[] {
  const { hiddenSize: D, headDim: hd, numAttentionHeads: hq, numKeyValueHeads: hkv, vocabSize: V, intermediateSize: I } = config;
  const qkv = (hq + 2 * hkv) * hd;
  const out: ParameterSpec[] = [{ name: 'embed_tokens.weight', shape: [V, D] }];
  for (let i = 0; i < config.numHiddenLayers; i++) {
    const p = `layers.${i}`;
    out.push(
      { name: `${p}.input_layernorm.weight`, shape: [D] },
      { name: `${p}.self_attn.qkv_proj.weight`, shape: [qkv, D] },
      ...(config.attentionBias ? [{ name: `${p}.self_attn.qkv_proj.bias`, shape: [qkv] }] : []),
      { name: `${p}.self_attn.o_proj.weight`, shape: [D, hq * hd] },
      ...(config.attentionBias ? [{ name: `${p}.self_attn.o_proj.bias`, shape: [D] }] : []),
      { name: `${p}.post_attention_layernorm.weight`, shape: [D] },
      { name: `${p}.mlp.gate_up_proj.weight`, shape: [2 * I, D] },
      ...(config.mlpBias ? [{ name: `${p}.mlp.gate_up_proj.bias`, shape: [2 * I] }] : []),
      { name: `${p}.mlp.down_proj.weight`, shape: [D, I] },
      ...(config.mlpBias ? [{ name: `${p}.mlp.down_proj.bias`, shape: [D] }] : []),
    );
  }
  out.push({ name: 'norm.weight', shape: [D] }, { name: 'lm_head.weight', shape: [V, D] });
  return out;
}
