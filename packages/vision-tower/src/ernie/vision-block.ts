import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { activation } from '../activation.js';
import type { FrameMask } from './attention-mask.js';
import type { VisionBlockConfig } from './config.js';
import { type VisionRotary, visionAttention } from './vision-attention.js';

/** vLLM: Ernie4_5_VisionMLP, Qwen3_VisionMLP (its linear_fc1/2 mapped to fc1/2). fc1 -> act -> fc2, both with bias. */
export function visionMlp(g: Graph, w: Weights, config: VisionBlockConfig, x: Value): Value {
  const { hiddenSize: d, intermediateSize: i } = config;
  const h = nn.linear(g, x, w, 'fc1', { in: d, out: i });
  return nn.linear(g, activation(g, h, config.hiddenAct), w, 'fc2', { in: i, out: d });
}

/** vLLM: Ernie4_5_VisionBlock, Qwen3_VisionBlock. x = x + attn(norm1(x)); x = x + mlp(norm2(x)). */
export function visionBlock(g: Graph, w: Weights, config: VisionBlockConfig, x: Value, rotary: VisionRotary, frames: FrameMask): Value {
  const eps = config.blockNormEps;
  const normed = nn.layerNorm(g, x, w, 'norm1', eps);
  const attn = g.scope('attn', () => visionAttention(g, w.sub('attn'), config, normed, rotary, frames));
  const h = g.add(x, attn);
  const normed2 = nn.layerNorm(g, h, w, 'norm2', eps);
  const mlp = g.scope('mlp', () => visionMlp(g, w.sub('mlp'), config, normed2));
  return g.add(h, mlp);
}
