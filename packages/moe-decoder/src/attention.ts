import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { KvCacheMode, KvPair } from './types.js';

/**
 * What a decoder's self-attention module is built with (vLLM: the
 * constructor arguments of Ernie4_5_VLMoeAttention and GraniteAttention).
 * The sizes are named as in both text configs, so a config spreads in; the
 * rest is each model's choice, stated in its `attention.ts`.
 */
export interface SelfAttentionConfig {
  hiddenSize: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
  /** qkv_proj has a bias (vLLM: `qkv_bias` / `attention_bias`). */
  qkvBias: boolean;
  /** o_proj has a bias. */
  oProjBias: boolean;
  /** Softmax scale (vLLM: `self.scaling`). */
  scaling: number;
  /** vLLM `is_neox_style`: true rotates halves (GPT-NeoX), false rotates (even, odd) pairs (GPT-J). */
  isNeoxStyle: boolean;
  /**
   * In a 16-bit graph (`floatConvertPass`), rotate q and k in float32 with float32 tables and round back
   * (`g.inFloat32`, HF ERNIE's `q.float() * cos`); false: the tables are cast to the compute dtype and q, k
   * rotated in it (HF Granite's `cos.to(x.dtype)`). The same in float32 compute.
   */
  rotaryInFloat32: boolean;
  /** Per-head RMSNorm of q and k before the rotary (`q_norm`, `k_norm` [headDim]; Qwen3) with this eps; none when absent. */
  qkNormEps?: number;
}

/** One decoder step's inputs to a self-attention module. */
export interface SelfAttentionInputs {
  /** [B, S, D]: the module's input (a decoder layer takes its own input here and passes input_layernorm's output on). */
  hidden: Value;
  /** Rotary tables [B, S, headDim/2] float32, the same for every layer (laid out for `isNeoxStyle`); see `rotaryInFloat32`. */
  cos: Value;
  sin: Value;
  /** bool [B, 1, S, T], true = attend (`causalPaddingMask`). */
  mask: Value;
  /** The layer's cache [B, Hkv, P, headDim] (P may be 0); with it `present` [B, Hkv, P+S, headDim] is returned. */
  past?: KvPair;
  /**
   * 'append': `past` is a slot buffer [B, Hkv, C, headDim] that `mask` [B, 1, S, C + S] selects from, and
   * `present` is the new positions only, [B, Hkv, S, headDim] (see `KvCacheMode`; `APPEND_ATTENTION_PASSES`
   * then read the buffer in place). Default 'concat'.
   */
  kvCache?: KvCacheMode;
}

export interface SelfAttentionOutputs {
  /** [B, S, D]. */
  out: Value;
  /** Past + current keys and values ('append': the current ones only); only when `past` was given. */
  present: KvPair | undefined;
}

/**
 * Decoder self-attention in vLLM's forward order (Ernie4_5_VLMoeAttention,
 * GraniteAttention): packed qkv_proj (q rows, then k, then v), split, rotary
 * on q and k, GQA attention over past + current keys, o_proj. `w` is
 * relative to the module (`layers.3.self_attn`).
 *
 * Written with the opset-23 RotaryEmbedding and Attention ops; the fast forms are passes over the built graph
 * (@vlmkit/onnx-graph): `CONTRIB_PASSES` turn them into com.microsoft RotaryEmbedding and MultiHeadAttention /
 * GroupQueryAttention, `APPEND_ATTENTION_PASSES` read an 'append' cache in place on the CPU. With 'append' the
 * op's own present outputs (past + new) are left unread: that is how the pass sees the layout.
 */
export function selfAttention(g: Graph, w: Weights, config: SelfAttentionConfig, inputs: SelfAttentionInputs): SelfAttentionOutputs {
  const { hiddenSize: D, numAttentionHeads: hq, numKeyValueHeads: hkv, headDim: hd, isNeoxStyle } = config;
  const { cos, sin, past } = inputs;
  const qkv = nn.linear(g, inputs.hidden, w, 'qkv_proj', { bias: config.qkvBias, in: D, out: (hq + 2 * hkv) * hd });
  const [q0, k0, v] = g.split(qkv, [hq * hd, hkv * hd, hkv * hd], -1);
  const eps = config.qkNormEps;
  const headNorm = (x: Value, name: string, heads: number) =>
    eps === undefined ? x : g.reshape(nn.rmsNorm(g, g.reshape(x, [0, 0, heads, hd]), w, name, eps), [0, 0, heads * hd]);
  // ONNX RotaryEmbedding's `interleaved` is vLLM's not-neox (GPT-J) layout.
  const rotary = (x: Value, numHeads: number) =>
    g.scope('rotary_emb', () => {
      const rotate = () => g.rotaryEmbedding(x, cos, sin, { interleaved: !isNeoxStyle, numHeads });
      return config.rotaryInFloat32 ? g.inFloat32(rotate) : rotate();
    });
  const [q, k] = [rotary(headNorm(q0!, 'q_norm', hq), hq), rotary(headNorm(k0!, 'k_norm', hkv), hkv)];
  const r = g.scope('attn', () =>
    g.attention(q, k, v!, {
      qNumHeads: hq,
      kvNumHeads: hkv,
      scale: config.scaling,
      mask: inputs.mask,
      ...(past !== undefined ? { pastKey: past.key, pastValue: past.value } : {}),
    }),
  );
  const out = nn.linear(g, r.out, w, 'o_proj', { bias: config.oProjBias, in: hq * hd, out: D });
  if (r.presentKey === undefined) return { out, present: undefined };
  // 'append': the new rows as the cache lays them out; the op's own past + current is left unread.
  const present = inputs.kvCache === 'append' ? appendedRows(g, k, v!, hkv, hd) : { key: r.presentKey, value: r.presentValue! };
  return { out, present };
}

/** 'append' `present`: the new positions' keys and values [B, S, Hkv*hd] as cache rows [B, Hkv, S, hd]. */
function appendedRows(g: Graph, k: Value, v: Value, hkv: number, hd: number): KvPair {
  const heads = (x: Value) => g.transpose(g.reshape(x, [0, 0, hkv, hd]), [0, 2, 1, 3]);
  return g.scope('present', () => ({ key: heads(k), value: heads(v) }));
}
