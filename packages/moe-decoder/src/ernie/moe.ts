import type { Graph, Value, Weights } from '@vlmkit/onnx-graph';
import type { ErnieTextConfig } from './config.js';
import { ernieMlp } from './mlp.js';

/**
 * vLLM: Ernie4_5_VLMoeMoE (HF: Ernie4_5_VLMoeMoeBlock). Modality-isolated
 * experts: a token whose moe token type is nonzero (image/video patches and
 * their start/end delimiters) goes to the vision experts, every other token
 * to the text experts; the shared experts run on every token and are added.
 * `x` is [B, S, D], `moeTokenType` [B, S] int64; `w` is relative to the
 * module (`layers.3.mlp`).
 *
 * Two ways to run the experts (`experts` option):
 * - 'sparse' (default): per expert, only the tokens routed to it (NonZero on
 *   its routing weight, Gather, MatMul, ScatterND add): k of E experts' FLOPs
 *   per token, as vLLM's fused MoE.
 * - 'dense': every expert on every token (batched MatMul over the stacked
 *   weights), combined with routing weights that are zero for unchosen
 *   experts: E/k times the FLOPs, fewer and larger ops.
 */
export type ExpertsImpl = 'sparse' | 'dense';

export function ernieMoe(
  g: Graph,
  w: Weights,
  config: ErnieTextConfig,
  x: Value,
  moeTokenType: Value,
  opts: { routing?: boolean; experts?: ExpertsImpl } = {},
): { out: Value; routing: MoeRouting | undefined } {
  const D = config.hiddenSize;
  const { numExperts, intermediateSize, numSharedExperts } = config.moe;
  const tokens = g.reshape(x, [-1, D]); // [N, D]
  const isVision = g.cast(g.reshape(moeTokenType, [-1, 1]), 'bool'); // [N, 1]
  const impl = opts.experts ?? 'sparse';
  const isText = g.not(isVision);
  const text = fusedMoe(g, w, config, tokens, 'text', numExperts[0], intermediateSize[0], impl, isText);
  const vision = fusedMoe(g, w, config, tokens, 'vision', numExperts[1], intermediateSize[1], impl, isVision);
  // Sparse: each modality only wrote its own tokens' rows. Dense: both ran everywhere; keep each token's own.
  let out = impl === 'sparse' ? g.add(text.out, vision.out) : g.where(isVision, vision.out, text.out);
  if (numSharedExperts > 0) {
    const shared = g.scope('shared_experts', () => ernieMlp(g, w.sub('shared_experts'), tokens, intermediateSize[0] * numSharedExperts));
    out = g.add(out, shared);
  }
  // Each token's routing from the modality it took, for callers that inspect it.
  const routing = opts.routing
    ? g.scope('routing', () => ({
        topkIds: g.where(isVision, vision.chosen, text.chosen),
        topkWeights: g.where(isVision, vision.weights, text.weights),
      }))
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
  impl: ExpertsImpl,
  mine: Value,
): { out: Value; chosen: Value; weights: Value } {
  const D = config.hiddenSize;
  const { topK, normMin } = config.moe;
  const gate = g.param(w, `${modality}_experts_gate.weight`, [E, D]);
  const bias = g.param(w, `${modality}_experts.e_score_correction_bias`, [E]);
  const f32 = (v: Value) => (v.dtype === 'float32' ? v : g.cast(v, 'float32'));
  return g.scope(`${modality}_experts`, () => {
    const { chosen, weights, dense } = g.scope('router', () => {
      const logits = g.matmul(f32(x), g.transpose(f32(gate), [1, 0])); // [N, E]
      const probs = g.softmax(logits, -1);
      const [, chosen] = g.topk(g.add(probs, f32(bias)), topK, -1); // [N, k]
      const picked = g.gatherElements(probs, chosen, 1);
      const weights = g.div(picked, g.max(g.reduceSum(picked, [1]), normMin));
      // Dense [N, E] routing weights: sum over the k picks of one_hot(expert) * weight.
      const oneHot = g.cast(
        g.equal(
          g.unsqueeze(chosen, [2]),
          g.constant(
            'int64',
            [1, 1, E],
            Array.from({ length: E }, (_, e) => e),
          ),
        ),
        'float32',
      );
      return { chosen, weights, dense: g.reduceSum(g.mul(oneHot, g.unsqueeze(weights, [2])), [1], false) };
    });

    const ew = w.sub(`${modality}_experts`);
    const out =
      impl === 'sparse'
        ? sparseExperts(g, ew, x, g.mul(dense, g.cast(mine, 'float32')), E, I, D)
        : denseExperts(g, f32(g.param(ew, 'w13_weight', [E, 2 * I, D])), f32(g.param(ew, 'w2_weight', [E, D, I])), x, dense, I);
    return { out, chosen, weights };
  });
}

/**
 * Every expert on every token, weights on the left so no [E, ., .] weight is
 * ever transposed (a folded transpose would copy all expert weights at
 * session load): [E, 2I, D] x [D, N] -> SiLU(gate) * up [E, I, N] ->
 * [E, D, I] x [E, I, N] -> [E, D, N], summed with the dense routing weights.
 */
function denseExperts(g: Graph, w13: Value, w2: Value, x: Value, dense: Value, I: number): Value {
  const experts = g.scope('experts', () => {
    const gateUp = g.matmul(w13, g.transpose(x, [1, 0]));
    const [gt, up] = g.split(gateUp, [I, I], 1);
    return g.matmul(w2, g.mul(g.silu(gt!), up!));
  });
  const perExpert = g.unsqueeze(g.transpose(dense, [1, 0]), [1]); // [E, 1, N]
  return g.transpose(g.reduceSum(g.mul(experts, perExpert), [0], false), [1, 0]); // [N, D]
}

/**
 * Only the chosen experts: for expert e, the tokens with a nonzero routing
 * weight (`dense` [N, E], already zero for the other modality) are gathered,
 * run through the expert and added back, scaled, at their rows (vLLM:
 * FusedMoE; HF: Ernie4_5_VLMoeMoeExperts loops over the hit experts the
 * same way). Each expert's gate/up/down weights are the checkpoint's own
 * tensors (`{e}.gate_proj.weight` [I, D], ...), referenced in place; like
 * every linear here they are multiplied through a transpose that ORT folds
 * once at load (measured: MatMul on the folded [D, I] runs a decode step
 * twice as fast as Gemm with transB on ORT 1.29's CPU EP).
 */
function sparseExperts(g: Graph, w: Weights, x: Value, dense: Value, E: number, I: number, D: number): Value {
  const f32 = (v: Value) => (v.dtype === 'float32' ? v : g.cast(v, 'float32'));
  let out = g.mul(x, 0); // [N, D] zeros of x's shape
  for (let e = 0; e < E; e++) {
    out = g.scope(`${e}`, () => {
      const ew = w.sub(`${e}`);
      const [gate, up, down] = [
        g.param(ew, 'gate_proj.weight', [I, D]),
        g.param(ew, 'up_proj.weight', [I, D]),
        g.param(ew, 'down_proj.weight', [D, I]),
      ];
      const weight = g.gather(dense, g.constant('int64', [], [e]), 1); // [N]
      const rows = g.reshape(g.nonZero(g.greater(weight, 0)), [-1]); // [M]
      const xs = g.gather(x, rows, 0); // [M, D]
      const mm = (a: Value, b: Value) => g.matmul(a, g.transpose(f32(b), [1, 0]));
      const h = g.mul(g.silu(mm(xs, gate)), mm(xs, up));
      const y = mm(h, down); // [M, D]
      const scaled = g.mul(y, g.unsqueeze(g.gather(weight, rows, 0), [1]));
      return g.scatterND(out, g.unsqueeze(rows, [1]), scaled, 'add');
    });
  }
  return out;
}
