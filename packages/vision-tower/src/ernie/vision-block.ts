import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { activation } from '../activation.js';
import type { FrameMask } from './attention-mask.js';
import type { VisionBlockConfig } from './config.js';
import { type VisionRotary, visionAttention } from './vision-attention.js';

/** A block's MLP module on x [Np, D], its parameters under `w` (the block's `mlp`). */
export type VisionMlp = (g: Graph, w: Weights, config: VisionBlockConfig, x: Value) => Value;

/** vLLM: Ernie4_5_VisionMLP. fc1 -> act (quick_gelu) -> fc2, both with bias. */
export function visionMlp(g: Graph, w: Weights, config: VisionBlockConfig, x: Value): Value {
  const { hiddenSize: d, intermediateSize: i } = config;
  const h = nn.linear(g, x, w, 'fc1', { in: d, out: i });
  return nn.linear(g, activation(g, h, config.hiddenAct), w, 'fc2', { in: i, out: d });
}

/** vLLM: Ernie4_5_VisionBlock, and Qwen3_VisionBlock with its own `mlp`. x = x + attn(norm1(x)); x = x + mlp(norm2(x)). */
export function visionBlock(
  g: Graph,
  w: Weights,
  config: VisionBlockConfig,
  x: Value,
  rotary: VisionRotary,
  frames: FrameMask,
  mlp: VisionMlp = visionMlp,
): Value {
  const eps = config.blockNormEps;
  const normed = nn.layerNorm(g, x, w, 'norm1', eps);
  const attn = g.scope('attn', () => visionAttention(g, w.sub('attn'), config, normed, rotary, frames));
  const h = g.add(x, attn);
  const normed2 = nn.layerNorm(g, h, w, 'norm2', eps);
  const m = g.scope('mlp', () => mlp(g, w.sub('mlp'), config, normed2));
  return g.add(h, m);
}
