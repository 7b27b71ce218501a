import { type Graph, interleavedGateUp, stackedExperts, type Value, type Weights } from '@vlmkit/onnx-graph';
import { gatedSiluMlp } from '../mlp.js';
import type { ErnieTextConfig } from './config.js';
import { groupedExperts } from './grouped-experts.js';

/**
 * How a MoE layer runs its routed experts (the `experts` option):
 * - 'sparse' (default): per expert, only the tokens routed to it, grouped by
 *   expert (`groupedExperts`: one sort and one Split per layer and modality,
 *   Gather and MatMuls per expert): k of E experts' FLOPs per token, as vLLM's
 *   fused MoE.
 * - 'all': every expert on every token (batched MatMul over the stacked
 *   weights), combined with routing weights that are zero for unchosen
 *   experts: E/k times the FLOPs, in fewer and larger ops.
 * - 'fused': onnxruntime's com.microsoft MoE kernel per modality, on that
 *   modality's tokens (float weights only: a quantized decoder's experts are
 *   'sparse' Linear layers).
 */
export type ExpertsImpl = 'sparse' | 'all' | 'fused';

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
  /** Default 'sparse'. */
  experts?: ExpertsImpl;
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
  const impl = options.experts ?? 'sparse';
  const x = inputs.hidden;
  const tokens = g.reshape(x, [-1, D]); // [N, D]
  const isVision = g.cast(g.reshape(inputs.moeTokenType, [-1, 1]), 'bool'); // [N, 1]
  const isText = g.not(isVision);
  const text = routedExperts(g, w, config, { modality: 'text', tokens, inModality: isText, impl });
  // Sparse: each modality only wrote its own tokens' rows. All: both ran everywhere; keep each token's own.
  const withVision = (b: Graph, vision: Value) => (impl === 'all' ? b.where(isVision, vision, text.out) : b.add(text.out, vision));
  let out: Value;
  let vision: { topkIds: Value; topkWeights: Value } | undefined;
  // Routing outputs need both modalities' routers on every token, so no If then.
  if (options.routing || options.emptyModalityIf === false) {
    const v = routedExperts(g, w, config, { modality: 'vision', tokens, inModality: isVision, impl });
    out = withVision(g, v.out);
    vision = v;
  } else {
    // Runs without vision tokens (every decode step, text-only prompts) skip the vision router and experts: in
    // an If, since an empty modality still costs each of its ~75 nodes per layer a kernel launch. The text
    // experts' result is then the routed output as it was (the vision experts add nothing to a text token).
    const anyVision = g.cast(g.reduceMax(g.cast(g.reshape(isVision, [-1]), 'int32'), [0], false), 'bool');
    [out] = g.if(
      anyVision,
      (b) => [withVision(b, routedExperts(b, w, config, { modality: 'vision', tokens, inModality: isVision, impl }).out)],
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
      ? g.scope('routing', () => ({
          topkIds: g.where(isVision, vision.topkIds, text.topkIds),
          topkWeights: g.where(isVision, vision.topkWeights, text.topkWeights),
        }))
      : undefined;
  return { out: g.reshape(out, g.shapeOf(x), x.shape), routing };
}

interface RoutedExpertsArgs {
  modality: 'text' | 'vision';
  /** [N, D] flattened tokens. */
  tokens: Value;
  /** bool [N, 1]: the tokens of this modality (the 'sparse' path runs only those). */
  inModality: Value;
  impl: ExpertsImpl;
}

/**
 * One modality's router and routed experts (vLLM: `{m}_experts_gate` +
 * `{m}_experts` = FusedMoE with e_score_correction_bias and renormalize; HF:
 * Ernie4_5_VLMoeMoeTopKRouter + Ernie4_5_VLMoeMoeExperts), on tokens [N, D].
 *
 * Router, in float32 whatever the compute dtype (HF runs it with autocast off
 * on `hidden_states.float()` and the float32 gate; vLLM's gate is float32
 * too): p = softmax(x gate^T); topk_ids = topk(p + bias, k);
 * topk_weights = p[topk_ids] / max(sum, moe_norm_min) (HF clamps the sum;
 * vLLM divides by it unclamped, the same for any real sum). The weights are
 * then rounded to the compute dtype, as HF's `routing_weights.to(hidden_states.dtype)`.
 */
function routedExperts(
  g: Graph,
  w: Weights,
  config: ErnieTextConfig,
  args: RoutedExpertsArgs,
): { out: Value; topkIds: Value; topkWeights: Value } {
  const { modality, tokens: x, inModality, impl } = args;
  const k = modality === 'text' ? 0 : 1;
  const sizes: ExpertSizes = {
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
    const { topkIds, topkWeights, routingWeights, logits, chosen } = g.scope('router', () => {
      const logits = g.matmul(f32(x), g.transpose(f32(gate), [1, 0])); // [N, E]
      const probs = g.softmax(logits, -1);
      const [, topkIds] = g.topk(g.add(probs, f32(bias)), topK, -1); // [N, k]
      const picked = g.gatherElements(probs, topkIds, 1);
      const topkWeights = g.div(picked, g.max(g.reduceSum(picked, [1]), normMin));
      // The same weights scattered over all E experts, [N, E]: sum over the k picks of one_hot(expert) * weight.
      const oneHot = g.cast(
        g.equal(
          g.unsqueeze(topkIds, [2]),
          g.constant(
            'int64',
            [1, 1, E],
            Array.from({ length: E }, (_, e) => e),
          ),
        ),
        'float32',
      );
      const routingWeights = g.reduceSum(g.mul(oneHot, g.unsqueeze(topkWeights, [2])), [1], false);
      // 'fused': which experts each token chose, bool [N, E].
      const chosen = impl === 'fused' ? g.greater(g.reduceSum(oneHot, [1], false), g.scalar(0, 'float32')) : undefined;
      return { topkIds, topkWeights, routingWeights, logits, chosen };
    });

    const ew = w.sub(`${modality}_experts`);
    const out =
      impl === 'sparse'
        ? groupedExperts(g, ew, sizes, { tokens: x, topkIds, topkWeights, inModality })
        : impl === 'fused'
          ? fusedExperts(g, ew, sizes, { tokens: x, inModality, logits, chosen: chosen!, topK })
          : allExperts(g, ew, sizes, { tokens: x, routingWeights });
    return { out, topkIds, topkWeights };
  });
}

/** One modality's experts: E experts of intermediate size I on hidden size D. */
interface ExpertSizes {
  numExperts: number;
  intermediateSize: number;
  hiddenSize: number;
}

interface ExpertsInputs {
  /** [N, D]. */
  tokens: Value;
  /** [N, E] float32: each token's weight for each expert, zero for the experts it did not choose (used in the tokens' dtype). */
  routingWeights: Value;
}

/**
 * Every expert on every token ('all'), weights on the left so no [E, ., .]
 * weight is ever transposed (a folded transpose would copy all expert
 * weights at session load): [E, 2I, D] x [D, N] -> SiLU(gate) * up
 * [E, I, N] -> [E, D, I] x [E, I, N] -> [E, D, N], summed with the routing
 * weights. Reads the stacked `w13_weight` / `w2_weight`.
 */
function allExperts(g: Graph, w: Weights, sizes: ExpertSizes, inputs: ExpertsInputs): Value {
  const { numExperts: E, intermediateSize: I, hiddenSize: D } = sizes;
  const like = (v: Value) => g.cast(v, inputs.tokens.dtype);
  const w13 = like(g.param(w, 'w13_weight', [E, 2 * I, D]));
  const w2 = like(g.param(w, 'w2_weight', [E, D, I]));
  const experts = g.scope('experts', () => {
    const gateUp = g.matmul(w13, g.transpose(inputs.tokens, [1, 0]));
    const [gt, up] = g.split(gateUp, [I, I], 1);
    return g.matmul(w2, g.mul(g.silu(gt!), up!));
  });
  const perExpert = g.unsqueeze(g.transpose(like(inputs.routingWeights), [1, 0]), [1]); // [E, 1, N]
  return g.transpose(g.reduceSum(g.mul(experts, perExpert), [0], false), [1, 0]); // [N, D]
}

/**
 * The modality's routed experts as one com.microsoft MoE ('fused'), on its own tokens (NonZero, Gather; the
 * result scattered back, other rows zero). The op routes by itself (softmax of its router input, top-k,
 * renormalized), and ERNIE's router does not: it chooses by softmax + e_score_correction_bias and weights by
 * the softmax without the bias. So the op is given the logits of the experts this router chose and -1e30 for
 * the rest: its softmax over them is p_i / sum(p of the chosen) (shift-invariant), its top-k are exactly the
 * chosen, and its renormalized weights are ERNIE's (the moe_norm_min clamp only acts on sums below it, which k
 * softmax probabilities never are). Weights: the checkpoint's per-expert gate/up/down, packed once at save
 * (`interleavedGateUp`, `stackedExperts`), float32 ([E, 2I, D] + [E, D, I] per modality).
 */
function fusedExperts(
  g: Graph,
  w: Weights,
  sizes: ExpertSizes,
  inputs: { tokens: Value; inModality: Value; logits: Value; chosen: Value; topK: number },
): Value {
  const { numExperts: E, intermediateSize: I, hiddenSize: D } = sizes;
  const { tokens: x } = inputs;
  const per = (name: string, shape: [number, number]) => Array.from({ length: E }, (_, e) => g.paramRef(w.sub(`${e}`), name, shape));
  return g.scope('experts', () => {
    const like = (v: Value) => g.cast(v, x.dtype);
    const fc1 = like(g.initializer(g.scoped('fc1'), interleavedGateUp(per('gate_proj.weight', [I, D]), per('up_proj.weight', [I, D]))));
    const fc2 = like(g.initializer(g.scoped('fc2'), stackedExperts(per('down_proj.weight', [D, I]))));
    const rows = g.reshape(g.nonZero(g.reshape(inputs.inModality, [-1])), [-1]); // [M]
    const router = g.where(inputs.chosen, inputs.logits, g.scalar(-1e30, 'float32'));
    const y = g.moe(g.gather(x, rows, 0), like(g.gather(router, rows, 0)), fc1, fc2, { k: inputs.topK });
    return g.scatterND(g.mul(x, 0), g.unsqueeze(rows, [1]), y);
  });
}
