import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';

/**
 * The SiLU-gated MLP of both decoders (vLLM: Ernie4_5_MoeMLP, GraniteMLP):
 * down_proj(silu(gate) * up) with the packed gate_up_proj [2I, D] (gate rows
 * first), biases on both projections only with `bias`. `x` is [B, S, D] or
 * [N, D]; `w` is relative to the module (`layers.3.mlp`).
 */
export function gatedSiluMlp(g: Graph, w: Weights, x: Value, config: { intermediateSize: number; bias?: boolean }): Value {
  const { intermediateSize: I, bias = false } = config;
  return nn.gatedMlp(g, x, w, { gateUp: 'gate_up_proj', down: 'down_proj' }, I, { bias });
}
