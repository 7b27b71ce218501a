import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { type GraniteAttentionContext, graniteAttention } from './attention.js';
import type { GraniteTextConfig } from './config.js';
import { graniteMlp } from './mlp.js';

/**
 * vLLM: GraniteDecoderLayer. x + m * attn(norm(x)), then + m * mlp(norm(.)),
 * m = residual_multiplier. `w` is relative to the layer (`layers.3`).
 */
export function graniteDecoderLayer(
  g: Graph,
  w: Weights,
  config: GraniteTextConfig,
  x: Value,
  ctx: GraniteAttentionContext,
): { hidden: Value; presentKey: Value | undefined; presentValue: Value | undefined } {
  const { rmsNormEps: eps, residualMultiplier: m } = config;
  const normedIn = nn.rmsNorm(g, x, w, 'input_layernorm', eps);
  const attn = g.scope('self_attn', () => graniteAttention(g, w.sub('self_attn'), config, normedIn, ctx));
  const h = g.add(x, g.mul(attn.out, m));
  const normed = nn.rmsNorm(g, h, w, 'post_attention_layernorm', eps);
  const mlp = g.scope('mlp', () => graniteMlp(g, w.sub('mlp'), config, normed));
  return { hidden: g.add(h, g.mul(mlp, m)), presentKey: attn.presentKey, presentValue: attn.presentValue };
}
