import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { SelfAttentionInputs } from '../attention.js';
import { gatedSiluMlp } from '../mlp.js';
import type { KvPair } from '../types.js';
import { graniteAttention } from './attention.js';
import type { GraniteTextConfig } from './config.js';

/**
 * vLLM: GraniteDecoderLayer. x = x + m * attn(norm(x)); x = x + m * mlp(norm(x)), m = residual_multiplier.
 * `inputs.hidden` is the layer input, `hidden` its output; `w` is relative to the layer (`layers.3`).
 */
export function graniteDecoderLayer(
  g: Graph,
  w: Weights,
  config: GraniteTextConfig,
  inputs: SelfAttentionInputs,
): { hidden: Value; present: KvPair | undefined } {
  const { rmsNormEps: eps, residualMultiplier: m } = config;
  const x = inputs.hidden;
  const normedIn = nn.rmsNorm(g, x, w, 'input_layernorm', eps);
  const attn = g.scope('self_attn', () => graniteAttention(g, w.sub('self_attn'), config, { ...inputs, hidden: normedIn }));
  const h = g.add(x, g.mul(attn.out, m));
  const normed = nn.rmsNorm(g, h, w, 'post_attention_layernorm', eps);
  // vLLM: GraniteMLP (biases with `mlp_bias`).
  const mlp = g.scope('mlp', () =>
    gatedSiluMlp(g, w.sub('mlp'), normed, { intermediateSize: config.intermediateSize, bias: config.mlpBias }),
  );
  return { hidden: g.add(h, g.mul(mlp, m)), present: attn.present };
}
