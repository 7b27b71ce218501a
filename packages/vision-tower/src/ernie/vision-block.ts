import { type Graph, nn, type OpSet, type Value, type Weights } from '@vlmkit/onnx-graph';
import { activation } from '../activation.js';
import type { FrameMask } from './attention-mask.js';
import type { ErnieVisionConfig } from './config.js';
import { type VisionRotary, visionAttention } from './vision-attention.js';

/** vLLM: Ernie4_5_VisionMLP. fc1 -> act (quick_gelu) -> fc2, both with bias. */
export function visionMlp(g: Graph, w: Weights, config: ErnieVisionConfig, x: Value): Value {
  const { hiddenSize: d, intermediateSize: i } = config;
  const h = nn.linear(g, x, w, 'fc1', { in: d, out: i });
  return nn.linear(g, activation(g, h, config.hiddenAct), w, 'fc2', { in: i, out: d });
}

/**
 * vLLM: Ernie4_5_VisionBlock. x += attn(norm1(x)); x += mlp(norm2(x)). The block's input is `stream`'s
 * hidden + addend (the previous block's MLP branch), added together with norm1, and its own last add is left
 * to the norm after it (`next`): with `ops: 'contrib'` each add and its LayerNorm are one
 * SkipLayerNormalization. `input` is the block's input.
 */
export function visionBlock(
  g: Graph,
  w: Weights,
  config: ErnieVisionConfig,
  stream: nn.Residual,
  rotary: VisionRotary,
  frames: FrameMask,
  ops: OpSet = 'onnx',
): { input: Value; next: nn.Residual } {
  const eps = config.blockNormEps;
  const { sum: x, normed } = nn.residualLayerNorm(g, stream, w, 'norm1', eps, ops);
  const attn = g.scope('attn', () => visionAttention(g, w.sub('attn'), config, normed, rotary, frames));
  const { sum: h, normed: normed2 } = nn.residualLayerNorm(g, { hidden: x, addend: attn }, w, 'norm2', eps, ops);
  const mlp = g.scope('mlp', () => visionMlp(g, w.sub('mlp'), config, normed2));
  return { input: x, next: { hidden: h, addend: mlp } };
}
