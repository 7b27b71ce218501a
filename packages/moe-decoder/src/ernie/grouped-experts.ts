import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';

/** One modality's routed experts: E experts of intermediate size I on hidden size D. */
export interface GroupedExpertSizes {
  numExperts: number;
  intermediateSize: number;
  hiddenSize: number;
}

export interface GroupedExpertsInputs {
  /** [N, D] flattened tokens. */
  tokens: Value;
  /** [N, k] int64: each token's chosen experts (within the modality). */
  topkIds: Value;
  /** [N, k] float32: their routing weights. */
  topkWeights: Value;
  /** bool [N, 1]: the tokens of this modality; the others' picks are ignored. */
  inModality: Value;
}

/**
 * Only the chosen experts ('sparse'), grouped by expert so a layer has a fixed number of dispatch nodes
 * whatever E is (vLLM's fused MoE: moe_align_block_size sorts the (token, expert) pairs by expert; HF's
 * Ernie4_5_VLMoeMoeExperts loops over the hit experts):
 * 1. the (token, pick) pairs are sorted by expert id with TopK, which breaks ties by index, so each
 *    expert's rows stay in token order; the other modality's picks get id E and are dropped;
 * 2. one Split gives each expert its rows: Gather, gate/up/down (`{e}.{gate,up,down}_proj.weight` through
 *    `nn.linear`) and the SiLU product;
 * 3. the outputs go back to (token, pick) order, are scaled by their routing weights and summed over the
 *    k picks in expert order: one rounding per add in the tokens' dtype, as HF's `final_hidden_states.index_add_`.
 * A pick with routing weight exactly 0 is run and scaled by 0. Returns `out` [N, D] in the tokens' dtype, and
 * each expert's Linear outputs (what `markRoutedExperts` records).
 */
export function groupedExperts(
  g: Graph,
  w: Weights,
  sizes: GroupedExpertSizes,
  inputs: GroupedExpertsInputs,
): { out: Value; linears: { gate: Value; up: Value; down: Value }[] } {
  const { numExperts: E, intermediateSize: I, hiddenSize: D } = sizes;
  const { tokens: x, topkIds, topkWeights, inModality } = inputs;
  const k = topkIds.shape[1];
  if (typeof k !== 'number') throw new Error(`groupedExperts: topkIds ${topkIds} needs a static k`);
  const { tokenOfPick, counts, pickWeights, inverse } = g.scope('dispatch', () => {
    const ids = g.where(inModality, topkIds, g.constant('int64', [], [E])); // [N, k], E: not this modality
    const [sortedIds, order] = g.topk(ids, k, 1, { largest: false, sorted: true }); // picks in expert order
    const pickWeights = g.gatherElements(topkWeights, order, 1); // [N, k]
    const flat = g.reshape(sortedIds, [-1]); // [P], P = N * k
    const [, perm] = g.topk(flat, g.shapeOf(flat), 0, { largest: false, sorted: true }); // [P] pairs by expert
    const [, inverse] = g.topk(perm, g.shapeOf(perm), 0, { largest: false, sorted: true }); // argsort(perm)
    const bins = g.constant(
      'int64',
      [1, E + 1],
      Array.from({ length: E + 1 }, (_, e) => e),
    );
    const counts = g.reduceSum(g.cast(g.equal(g.unsqueeze(flat, [1]), bins), 'int64'), [0], false); // [E + 1]
    const tokenOfPick = g.div(perm, g.constant('int64', [], [k])); // [P] token of each sorted pair
    return { tokenOfPick, counts, pickWeights, inverse };
  });
  const groups = g.splitDynamic(tokenOfPick, counts, E + 1, 0);
  const linears = Array.from({ length: E }, (_, e) =>
    g.scope(`${e}`, () => {
      const ew = w.sub(`${e}`);
      const xs = g.gather(x, groups[e]!, 0); // [M_e, D]
      const proj = (v: Value, name: string, shape: { in: number; out: number }) => nn.linear(g, v, ew, name, { bias: false, ...shape });
      const gate = proj(xs, 'gate_proj', { in: D, out: I });
      const act = g.silu(gate);
      const up = proj(xs, 'up_proj', { in: D, out: I });
      return { gate, up, down: proj(g.mul(act, up), 'down_proj', { in: I, out: D }) }; // down [M_e, D]
    }),
  );
  const ys = linears.map((l) => l.down);
  const out = g.scope('combine', () => {
    const dropped = g.gather(counts, g.constant('int64', [1], [E]), 0); // [1]: picks of the other modality
    const zeros = g.constantOfShape(g.concat([dropped, g.constant('int64', [1], [D])], 0), 0, x.dtype);
    const sorted = g.concat([...ys, zeros], 0); // [P, D] in expert order
    const byPick = g.reshape(g.gather(sorted, inverse, 0), [-1, k, D]); // [N, k, D]
    const scaled = g.mul(byPick, g.unsqueeze(pickWeights, [2]));
    const picks = g.split(scaled, Array(k).fill(1), 1).map((p) => g.reshape(p, [-1, D]));
    return picks.slice(1).reduce((acc, p) => g.add(acc, p), picks[0]!); // [N, D]
  });
  return { out, linears };
}
