import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { ErnieTextConfig } from './config.js';

export interface AttentionContext {
  /** Rotary tables [B, S, headDim/2] (GPT-J interleaved pairs). */
  cos: Value;
  sin: Value;
  /** bool [B, 1, S, T], true = attend (`causalPaddingMask`). */
  mask: Value;
  /** [B, Hkv, P, headDim] (P may be 0); with it the present key/value [B, Hkv, P+S, headDim] are returned. */
  pastKey?: Value;
  pastValue?: Value;
}

/**
 * vLLM: Ernie4_5_VLMoeAttention. Packed qkv_proj (q rows, then k, then v; no
 * bias), ERNIE 3D rotary on q and k (GPT-J interleaved, tables from the 3D
 * positions), GQA attention with scale head_dim^-0.5 over past + current
 * keys, o_proj. `x` is [B, S, D]; `w` is relative to the module (`layers.3.self_attn`).
 */
export function ernieAttention(
  g: Graph,
  w: Weights,
  config: ErnieTextConfig,
  x: Value,
  ctx: AttentionContext,
): { out: Value; presentKey: Value | undefined; presentValue: Value | undefined } {
  const { numAttentionHeads: hq, numKeyValueHeads: hkv, headDim: hd, hiddenSize: D } = config;
  const qkv = nn.linear(g, x, w, 'qkv_proj', { bias: false, in: D, out: (hq + 2 * hkv) * hd });
  const [q0, k0, v] = g.split(qkv, [hq * hd, hkv * hd, hkv * hd], -1);
  const q = g.scope('rotary_emb', () => g.rotaryEmbedding(q0!, ctx.cos, ctx.sin, { interleaved: true, numHeads: hq }));
  const k = g.scope('rotary_emb', () => g.rotaryEmbedding(k0!, ctx.cos, ctx.sin, { interleaved: true, numHeads: hkv }));
  const r = g.scope('attn', () =>
    g.attention(q, k, v!, {
      qNumHeads: hq,
      kvNumHeads: hkv,
      scale: hd ** -0.5,
      mask: ctx.mask,
      ...(ctx.pastKey !== undefined ? { pastKey: ctx.pastKey, pastValue: ctx.pastValue } : {}),
    }),
  );
  const out = nn.linear(g, r.out, w, 'o_proj', { bias: false, in: hq * hd, out: D });
  return { out, presentKey: r.presentKey, presentValue: r.presentValue };
}
