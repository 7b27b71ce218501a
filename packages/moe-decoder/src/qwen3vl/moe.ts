import { type Graph, markRoutedExperts, type Value, type Weights } from '@vlmkit/onnx-graph';
import { groupedExperts } from '../ernie/grouped-experts.js';
import type { MoeRouting } from '../ernie/moe.js';
import type { Qwen3VlTextConfig } from './config.js';

/**
 * vLLM: Qwen3MoeSparseMoeBlock (HF: Qwen3VLMoeTextSparseMoeBlock). Router: p = softmax(x gate^T) over all
 * experts in float32, the top-k of p renormalized to sum 1 (HF Qwen3VLMoeTextTopKRouter); no shared expert.
 * The experts run grouped (ERNIE's `groupedExperts`, every token in the one modality) and are marked
 * (`markRoutedExperts`) for the `moe-experts` / `qmoe-experts` passes. `x` [B, S, D] is already normed;
 * `w` is relative to the module (`layers.3.mlp`).
 */
export function qwen3VlMoe(g: Graph, w: Weights, config: Qwen3VlTextConfig, x: Value): { out: Value; routing: MoeRouting } {
  const { hiddenSize: D } = config;
  const { numExperts: E, topK, intermediateSize } = config.moe!;
  const tokens = g.reshape(x, [-1, D]); // [N, D]
  const gate = g.param(w, 'gate.weight', [E, D]);
  const f32 = (v: Value) => (v.dtype === 'float32' ? v : g.cast(v, 'float32'));
  // In float32 whatever the compute dtype (HF: F.linear in the compute dtype, softmax in float32): a 16-bit
  // graph rounds the router logits less than HF does, and the MoE pass reads them as float32.
  const { topkIds, topkWeights, routerLogits } = g.scope('router', () =>
    g.inFloat32(() => {
      const routerLogits = g.matmul(f32(tokens), g.transpose(f32(gate), [1, 0])); // [N, E]
      const probs = g.softmax(routerLogits, -1);
      const [picked, topkIds] = g.topk(probs, topK, -1); // [N, k]
      return { topkIds, topkWeights: g.div(picked, g.reduceSum(picked, [1])), routerLogits };
    }),
  );
  const all = g.constantOfShape(g.shapeOf(tokens, 0, 1), 1, 'int64', [tokens.dim(0)]);
  const inModality = g.cast(g.unsqueeze(all, [1]), 'bool'); // [N, 1]: every token is routed
  const out = g.scope('experts', () => {
    const sizes = { numExperts: E, intermediateSize, hiddenSize: D };
    const experts = groupedExperts(g, w.sub('experts'), sizes, { tokens, topkIds, topkWeights, inModality });
    return markRoutedExperts(g, experts.out, { tokens, inModality, routerLogits, topkIds, experts: experts.linears });
  });
  return { out: g.reshape(out, g.shapeOf(x), x.shape), routing: { topkIds, topkWeights } };
}
