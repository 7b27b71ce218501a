import { type Graph, markRoutedExperts, type Value, type Weights } from '@vlmkit/onnx-graph';
import { gatedSiluMlp } from '../mlp.js';
import type { ErnieTextConfig } from './config.js';
import { type GroupedExpertSizes, groupedExperts } from './grouped-experts.js';

/** The router's choice per token over the flattened [B*S] tokens: expert ids [N, k] int64 (within the modality) and weights [N, k]. */
export interface MoeRouting {
  topkIds: Value;
  topkWeights: Value;
}

export interface ErnieMoeInputs {
  /** [B, S, D], already normed (post_attention_layernorm). */
  hidden: Value;
  /** [B, S] int64: nonzero sends the token to the vision experts. */
  moeTokenType: Value;
}

export interface ErnieMoeOptions {
  /**
   * Run the vision router and experts in an If that skips them when no token is a vision one (default true).
   * false runs them on the empty modality instead: on CUDA an If's condition is read on the host, a copy and
   * sync per layer and step.
   */
  emptyModalityIf?: boolean;
  /** Also return each token's routing (`MoeRouting`), for tests and debugging. */
  routing?: boolean;
}

/**
 * vLLM: Ernie4_5_VLMoeMoE (HF: Ernie4_5_VLMoeMoeBlock). Modality-isolated
 * experts: a token whose moe token type is nonzero (image/video patches and
 * their start/end delimiters) goes to the vision experts, every other token
 * to the text experts; the shared experts run on every token and are added.
 * Built in the module's parameter order (text, vision, shared experts); `w`
 * is relative to the module (`layers.3.mlp`).
 */
export function ernieMoe(
  g: Graph,
  w: Weights,
  config: ErnieTextConfig,
  inputs: ErnieMoeInputs,
  options: ErnieMoeOptions = {},
): { out: Value; routing: MoeRouting | undefined } {
  const { hiddenSize: D, moe } = config;
  const x = inputs.hidden;
  const tokens = g.reshape(x, [-1, D]); // [N, D]
  const isVision = g.cast(g.reshape(inputs.moeTokenType, [-1, 1]), 'bool'); // [N, 1]
  const isText = g.not(isVision);
  const text = routedExperts(g, w, config, { modality: 'text', tokens, inModality: isText });
  // Each modality wrote its own tokens' rows only.
  const withVision = (b: Graph, vision: Value) => b.add(text.out, vision);
  let out: Value;
  let vision: { topkIds: Value; topkWeights: Value } | undefined;
  // Routing outputs need both modalities' routers on every token, so no If then.
  if (options.routing || options.emptyModalityIf === false) {
    const v = routedExperts(g, w, config, { modality: 'vision', tokens, inModality: isVision });
    out = withVision(g, v.out);
    vision = v;
  } else {
    // Runs without vision tokens (every decode step, text-only prompts) skip the vision router and experts: in
    // an If, since an empty modality still costs each of its ~75 nodes per layer a kernel launch. The text
    // experts' result is then the routed output as it was (the vision experts add nothing to a text token).
    const anyVision = g.cast(g.reduceMax(g.cast(g.reshape(isVision, [-1]), 'int32'), [0], false), 'bool');
    [out] = g.if(
      anyVision,
      (b) => [withVision(b, routedExperts(b, w, config, { modality: 'vision', tokens, inModality: isVision }).out)],
      () => [text.out],
    ) as [Value];
  }
  if (moe.numSharedExperts > 0) {
    // vLLM: shared_experts = Ernie4_5_VLMoeMLP(intermediate_size = moe_intermediate_size[0] * moe_num_shared_experts).
    const intermediateSize = moe.intermediateSize[0] * moe.numSharedExperts;
    const shared = g.scope('shared_experts', () => gatedSiluMlp(g, w.sub('shared_experts'), tokens, { intermediateSize }));
    out = g.add(out, shared);
  }
  // Each token's routing from the modality it took, for callers that inspect it.
  const routing =
    vision !== undefined
      ? g.scope('routing', () =>
          g.inFloat32(() => ({
            topkIds: g.where(isVision, vision.topkIds, text.topkIds),
            topkWeights: g.where(isVision, vision.topkWeights, text.topkWeights),
          })),
        )
      : undefined;
  return { out: g.reshape(out, g.shapeOf(x), x.shape), routing };
}

interface RoutedExpertsArgs {
  modality: 'text' | 'vision';
  /** [N, D] flattened tokens. */
  tokens: Value;
  /** bool [N, 1]: the tokens of this modality (the only ones its experts run). */
  inModality: Value;
}

/**
 * One modality's router and routed experts (vLLM: `{m}_experts_gate` +
 * `{m}_experts` = FusedMoE with e_score_correction_bias and renormalize; HF:
 * Ernie4_5_VLMoeMoeTopKRouter + Ernie4_5_VLMoeMoeExperts), on tokens [N, D].
 *
 * Router, in float32 whatever the compute dtype (`g.inFloat32`; HF runs it with autocast off
 * on `hidden_states.float()` and the float32 gate; vLLM's gate is float32
 * too): p = softmax(x gate^T); topk_ids = topk(p + bias, k);
 * topk_weights = p[topk_ids] / max(sum, moe_norm_min) (HF clamps the sum;
 * vLLM divides by it unclamped, the same for any real sum). The weights are
 * then rounded to the compute dtype, as HF's `routing_weights.to(hidden_states.dtype)`.
 *
 * The experts run grouped (`groupedExperts`), and the result is marked (`markRoutedExperts`) for the
 * `moe-experts` / `qmoe-experts` passes, which make them one com.microsoft MoE / QMoE.
 */
function routedExperts(
  g: Graph,
  w: Weights,
  config: ErnieTextConfig,
  args: RoutedExpertsArgs,
): { out: Value; topkIds: Value; topkWeights: Value } {
  const { modality, tokens: x, inModality } = args;
  const k = modality === 'text' ? 0 : 1;
  const sizes: GroupedExpertSizes = {
    numExperts: config.moe.numExperts[k]!,
    intermediateSize: config.moe.intermediateSize[k]!,
    hiddenSize: config.hiddenSize,
  };
  const { numExperts: E, hiddenSize: D } = sizes;
  const { topK, normMin } = config.moe;
  const gate = g.param(w, `${modality}_experts_gate.weight`, [E, D]);
  const bias = g.param(w, `${modality}_experts.e_score_correction_bias`, [E]);
  const f32 = (v: Value) => (v.dtype === 'float32' ? v : g.cast(v, 'float32'));
  return g.scope(`${modality}_experts`, () => {
    const { topkIds, topkWeights, logits } = g.scope('router', () =>
      g.inFloat32(() => {
        const logits = g.matmul(f32(x), g.transpose(f32(gate), [1, 0])); // [N, E]
        const probs = g.softmax(logits, -1);
        const [, topkIds] = g.topk(g.add(probs, f32(bias)), topK, -1); // [N, k]
        const picked = g.gatherElements(probs, topkIds, 1);
        const topkWeights = g.div(picked, g.max(g.reduceSum(picked, [1]), normMin));
        return { topkIds, topkWeights, logits };
      }),
    );
    const experts = groupedExperts(g, w.sub(`${modality}_experts`), sizes, { tokens: x, topkIds, topkWeights, inModality });
    const out = markRoutedExperts(g, experts.out, { tokens: x, inModality, routerLogits: logits, topkIds, experts: experts.linears });
    return { out, topkIds, topkWeights };
  });
}
