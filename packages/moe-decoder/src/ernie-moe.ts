import type { Graph, Value, Weights } from '@vlmkit/onnx-graph';
import type { ErnieTextConfig } from './ernie-config.js';
import { ernieMlp } from './ernie-mlp.js';

/**
 * vLLM: Ernie4_5_VLMoeMoE (HF: Ernie4_5_VLMoeMoeBlock). Modality-isolated
 * experts: a token whose moe token type is nonzero (image/video patches and
 * their start/end delimiters) goes to the vision experts, every other token
 * to the text experts; the shared experts run on every token and are added.
 * `x` is [B, S, D], `moeTokenType` [B, S] int64; `w` is relative to the
 * module (`layers.3.mlp`).
 *
 * This first version runs both expert sets on every token, each expert
 * densely (batched MatMul over the stacked weights), and combines with routing weights that are zero for unchosen
 * experts and for the other modality; computing only the chosen experts is
 * a later optimisation.
 */
export function ernieMoe(
  g: Graph,
  w: Weights,
  config: ErnieTextConfig,
  x: Value,
  moeTokenType: Value,
  opts: { routing?: boolean } = {},
): { out: Value; routing: MoeRouting | undefined } {
  const D = config.hiddenSize;
  const { numExperts, intermediateSize, numSharedExperts } = config.moe;
  const tokens = g.reshape(x, [-1, D]); // [N, D]
  const isVision = g.cast(g.reshape(moeTokenType, [-1, 1]), 'bool'); // [N, 1]
  const text = fusedMoe(g, w, config, tokens, 'text', numExperts[0], intermediateSize[0]);
  const vision = fusedMoe(g, w, config, tokens, 'vision', numExperts[1], intermediateSize[1]);
  let out = g.where(isVision, vision.out, text.out);
  if (numSharedExperts > 0) {
    const shared = g.scope('shared_experts', () => ernieMlp(g, w.sub('shared_experts'), tokens, intermediateSize[0] * numSharedExperts));
    out = g.add(out, shared);
  }
  // Each token's routing from the modality it took, for callers that inspect it.
  const routing = opts.routing
    ? g.scope('routing', () => ({ topkIds: g.where(isVision, vision.chosen, text.chosen), topkWeights: g.where(isVision, vision.weights, text.weights) }))
    : undefined;
  return { out: g.reshape(out, g.shapeOf(x), x.shape), routing };
}

/** The router's choice per token over the flattened [B*S] tokens: expert ids [N, k] int64 (within the modality) and weights [N, k]. */
export interface MoeRouting {
  topkIds: Value;
  topkWeights: Value;
}

/**
 * One modality's router and experts (vLLM: `{m}_experts_gate` + FusedMoE
 * with e_score_correction_bias and renormalize; HF:
 * Ernie4_5_VLMoeMoeTopKRouter + Ernie4_5_VLMoeMoeExperts), on tokens [N, D].
 *
 * Router, in float32: p = softmax(x gate^T); experts = topk(p + bias, k);
 * weights = p[experts] / max(sum, moe_norm_min) (HF clamps the sum; vLLM
 * divides by it unclamped, the same for any real sum).
 */
function fusedMoe(
  g: Graph,
  w: Weights,
  config: ErnieTextConfig,
  x: Value,
  modality: 'text' | 'vision',
  E: number,
  I: number,
): { out: Value; chosen: Value; weights: Value } {
  const D = config.hiddenSize;
  const { topK, normMin } = config.moe;
  const gate = g.param(w, `${modality}_experts_gate.weight`, [E, D]);
  const bias = g.param(w, `${modality}_experts.e_score_correction_bias`, [E]);
  const w13 = g.param(w, `${modality}_experts.w13_weight`, [E, 2 * I, D]);
  const w2 = g.param(w, `${modality}_experts.w2_weight`, [E, D, I]);
  const f32 = (v: Value) => (v.dtype === 'float32' ? v : g.cast(v, 'float32'));
  return g.scope(`${modality}_experts`, () => {
    const { chosen, weights, dense } = g.scope('router', () => {
      const logits = g.matmul(f32(x), g.transpose(f32(gate), [1, 0])); // [N, E]
      const probs = g.softmax(logits, -1);
      const [, chosen] = g.topk(g.add(probs, f32(bias)), topK, -1); // [N, k]
      const picked = g.gatherElements(probs, chosen, 1);
      const weights = g.div(picked, g.max(g.reduceSum(picked, [1]), normMin));
      // Dense [N, E] routing weights: sum over the k picks of one_hot(expert) * weight.
      const oneHot = g.cast(g.equal(g.unsqueeze(chosen, [2]), g.constant('int64', [1, 1, E], Array.from({ length: E }, (_, e) => e))), 'float32');
      return { chosen, weights, dense: g.reduceSum(g.mul(oneHot, g.unsqueeze(weights, [2])), [1], false) };
    });

    // Every expert on every token, weights on the left so no [E, ., .] weight is ever transposed
    // (a folded transpose would copy all expert weights at session load):
    // [E, 2I, D] x [D, N] -> SiLU(gate) * up [E, I, N] -> [E, D, I] x [E, I, N] -> [E, D, N].
    const experts = g.scope('experts', () => {
      const gateUp = g.matmul(f32(w13), g.transpose(x, [1, 0]));
      const [gt, up] = g.split(gateUp, [I, I], 1);
      return g.matmul(f32(w2), g.mul(g.silu(gt!), up!));
    });
    const perExpert = g.unsqueeze(g.transpose(dense, [1, 0]), [1]); // [E, 1, N]
    const out = g.transpose(g.reduceSum(g.mul(experts, perExpert), [0], false), [1, 0]); // [N, D]
    return { out, chosen, weights };
  });
}
