import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { GraniteTextConfig } from './config.js';

export interface GraniteAttentionContext {
  /** Rotary tables [B, S, headDim/2] float32 (neox halves; `graniteRotaryTables`). */
  cos: Value;
  sin: Value;
  /** bool [B, 1, S, T], true = attend (`causalPaddingMask`). */
  mask: Value;
  /** [B, Hkv, P, headDim] (P may be 0); with it the present key/value [B, Hkv, P+S, headDim] are returned. */
  pastKey?: Value;
  pastValue?: Value;
}

/**
 * vLLM: GraniteAttention. Packed qkv_proj (q rows, then k, then v), 1D RoPE
 * on q and k (neox: rotate halves), GQA attention whose softmax scale is
 * `attention_multiplier` itself (not head_dim^-0.5), o_proj. `x` is
 * [B, S, D]; `w` is relative to the module (`layers.3.self_attn`).
 */
export function graniteAttention(
  g: Graph,
  w: Weights,
  config: GraniteTextConfig,
  x: Value,
  ctx: GraniteAttentionContext,
): { out: Value; presentKey: Value | undefined; presentValue: Value | undefined } {
  const { numAttentionHeads: hq, numKeyValueHeads: hkv, headDim: hd, hiddenSize: D } = config;
  const qkv = nn.linear(g, x, w, 'qkv_proj', { bias: config.attentionBias, in: D, out: (hq + 2 * hkv) * hd });
  const [q0, k0, v] = g.split(qkv, [hq * hd, hkv * hd, hkv * hd], -1);
  const q = g.scope('rotary_emb', () => g.rotaryEmbedding(q0!, ctx.cos, ctx.sin, { interleaved: false, numHeads: hq }));
  const k = g.scope('rotary_emb', () => g.rotaryEmbedding(k0!, ctx.cos, ctx.sin, { interleaved: false, numHeads: hkv }));
  const r = g.scope('attn', () =>
    g.attention(q, k, v!, {
      qNumHeads: hq,
      kvNumHeads: hkv,
      scale: config.attentionMultiplier,
      mask: ctx.mask,
      ...(ctx.pastKey !== undefined ? { pastKey: ctx.pastKey, pastValue: ctx.pastValue } : {}),
    }),
  );
  const out = nn.linear(g, r.out, w, 'o_proj', { bias: config.attentionBias, in: hq * hd, out: D });
  return { out, presentKey: r.presentKey, presentValue: r.presentValue };
}
