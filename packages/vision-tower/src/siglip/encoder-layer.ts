import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { activation } from '../activation.js';
import type { AttentionOp } from '../types.js';
import type { SiglipVisionConfig } from './config.js';

/** vLLM: SiglipAttention. Packed qkv_proj, full (unmasked) attention over a tile's patches, out_proj. */
export function siglipAttention(g: Graph, w: Weights, config: SiglipVisionConfig, x: Value, op: AttentionOp): Value {
  const { hiddenSize: d, numAttentionHeads: heads } = config;
  const qkv = nn.linear(g, x, w, 'qkv_proj', { in: d, out: 3 * d });
  const [q, k, v] = g.split(qkv, [d, d, d], -1) as [Value, Value, Value];
  const scale = 1 / Math.sqrt(d / heads);
  const out =
    op === 'Attention'
      ? g.attention(q, k, v, { qNumHeads: heads, kvNumHeads: heads, scale }).out
      : g.multiHeadAttention(q, k, v, { numHeads: heads, scale }).out;
  return nn.linear(g, out, w, 'out_proj', { in: d, out: d });
}

/** vLLM: SiglipMLP. fc1 -> gelu_pytorch_tanh -> fc2. */
export function siglipMlp(g: Graph, w: Weights, config: SiglipVisionConfig, x: Value): Value {
  const { hiddenSize: d, intermediateSize: i } = config;
  return nn.linear(g, activation(g, nn.linear(g, x, w, 'fc1', { in: d, out: i }), config.hiddenAct), w, 'fc2', { in: i, out: d });
}

/** vLLM: SiglipEncoderLayer. x = x + self_attn(layer_norm1(x)); x = x + mlp(layer_norm2(x)). */
export function siglipEncoderLayer(g: Graph, w: Weights, config: SiglipVisionConfig, x: Value, op: AttentionOp): Value {
  const eps = config.layerNormEps;
  const normed = nn.layerNorm(g, x, w, 'layer_norm1', eps);
  const attn = g.scope('self_attn', () => siglipAttention(g, w.sub('self_attn'), config, normed, op));
  const h = g.add(x, attn);
  const normed2 = nn.layerNorm(g, h, w, 'layer_norm2', eps);
  const mlp = g.scope('mlp', () => siglipMlp(g, w.sub('mlp'), config, normed2));
  return g.add(h, mlp);
}
