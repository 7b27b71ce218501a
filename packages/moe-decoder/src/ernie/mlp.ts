import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';

/**
 * vLLM: Ernie4_5_VLMoeMLP (Ernie4_5_MoeMLP): down_proj(silu(gate) * up) with
 * the packed gate_up_proj [2I, D] (gate rows first). Used for dense layers
 * and the shared experts.
 */
export function ernieMlp(g: Graph, w: Weights, x: Value, intermediateSize: number): Value {
  return nn.gatedMlp(g, x, w, { gateUp: 'gate_up_proj', down: 'down_proj' }, intermediateSize);
}
