import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { GraniteTextConfig } from './config.js';

/**
 * vLLM: GraniteMLP. down_proj(silu(gate) * up) with the packed gate_up_proj
 * [2I, D] (gate rows first; the hub's `shared_mlp.input_linear` has the same
 * layout). Biases only with `mlpBias`.
 */
export function graniteMlp(g: Graph, w: Weights, config: GraniteTextConfig, x: Value): Value {
  const I = config.intermediateSize;
  if (!config.mlpBias) return nn.gatedMlp(g, x, w, { gateUp: 'gate_up_proj', down: 'down_proj' }, I);
  const [gate, up] = g.split(nn.linear(g, x, w, 'gate_up_proj', { out: 2 * I }), [I, I], -1);
  return nn.linear(g, g.mul(g.silu(gate!), up!), w, 'down_proj', { in: I });
}
