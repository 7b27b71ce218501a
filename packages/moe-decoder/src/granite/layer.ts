import { type Graph, nn, type OpSet, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { SelfAttentionInputs } from '../attention.js';
import { gatedSiluMlp } from '../mlp.js';
import type { KvPair } from '../types.js';
import { graniteAttention } from './attention.js';
import type { GraniteTextConfig } from './config.js';

/**
 * vLLM: GraniteDecoderLayer. x + m * attn(norm(x)), then + m * mlp(norm(.)),
 * m = residual_multiplier. The layer input is `inputs.hidden` + `inputs.addend`
 * (the previous layer's last branch, added with input_layernorm); the layer's
 * own last add is left to the norm after it (`next`), so each residual add
 * meets its norm (one SkipSimplifiedLayerNormalization on 'contrib'). `input`
 * is the layer input; `w` is relative to the layer (`layers.3`).
 */
export function graniteDecoderLayer(
  g: Graph,
  w: Weights,
  config: GraniteTextConfig,
  inputs: SelfAttentionInputs & { addend?: Value | undefined },
  ops: OpSet = 'onnx',
): { input: Value; next: nn.Residual; present: KvPair | undefined } {
  const { rmsNormEps: eps, residualMultiplier: m } = config;
  const { sum: x, normed: normedIn } = nn.residualRmsNorm(g, inputs, w, 'input_layernorm', eps, ops);
  const attn = g.scope('self_attn', () => graniteAttention(g, w.sub('self_attn'), config, { ...inputs, hidden: normedIn }));
  const { sum: h, normed } = nn.residualRmsNorm(g, { hidden: x, addend: g.mul(attn.out, m) }, w, 'post_attention_layernorm', eps, ops);
  // vLLM: GraniteMLP (biases with `mlp_bias`).
  const mlp = g.scope('mlp', () =>
    gatedSiluMlp(g, w.sub('mlp'), normed, { intermediateSize: config.intermediateSize, bias: config.mlpBias }),
  );
  return { input: x, next: { hidden: h, addend: g.mul(mlp, m) }, present: attn.present };
}
