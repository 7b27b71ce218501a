import type { Graph } from '../graph.js';
import { MS_DOMAIN } from '../graph-core.js';
import type { OnnxTypes } from '../proto.js';
import type { Value } from '../value.js';
import { valueInfo } from '../value-info.js';
import { PassBuilder, SharedInputs, scopeOf } from './attention-pattern.js';
import { type GraphPass, type NodeIndex, type PassBody, replaceNodes, rewriteEach } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

/** MultiHeadAttention's attention_bias input. */
const ATTENTION_BIAS = 5;

/** Frame biases by name (`markFrameBias`): the segment ids each was made from. */
const frameBiases = new WeakMap<Graph, Map<string, string>>();

/**
 * Records `bias` as a block-diagonal attention bias made from per-patch frame ids `segmentIds` (0 within a
 * frame, a large negative across frames), for `oneFrameAttentionPass`. Returns `bias`.
 */
export function markFrameBias(g: Graph, bias: Value, segmentIds: Value): Value {
  const byName = frameBiases.get(g.root) ?? new Map<string, string>();
  frameBiases.set(g.root, byName);
  byName.set(bias.name, segmentIds.name);
  return bias;
}

/** The MultiHeadAttention nodes this pass wrote (its branches keep one each): never rewritten again. */
const made = new WeakSet<Node>();

/**
 * A vision tower's MultiHeadAttention over a frame bias (`markFrameBias`) in an If on "one frame": an image
 * is one frame, and then the bias is all zeros, which ORT's CPU kernel still adds to every head's scores (a
 * [N, N] read per head: 23.4 ms against 17.4 ms without a bias at N = 1024, 16 heads of 64, 2 threads). The
 * then-branch runs the op without the bias, the else-branch as it was; the same function (adding 0 changes no
 * score). One condition per body (min of the segment ids = max), shared by its layers.
 */
export const oneFrameAttentionPass: GraphPass = {
  name: 'one-frame-attention',
  run: (body) => {
    const segments = frameBiases.get(body.graph.root);
    if (segments === undefined) return 0;
    const shared = new SharedInputs();
    return rewriteEach(body, (node, index) => {
      const bias = node.input?.[ATTENTION_BIAS];
      const seg = bias ? segments.get(bias) : undefined;
      if (made.has(node) || node.opType !== 'MultiHeadAttention' || node.domain !== MS_DOMAIN || seg === undefined) return false;
      if ((node.input ?? []).length > ATTENTION_BIAS + 1 || (node.output ?? []).length !== 1) return false; // no past
      return rewrite(body, index, node, seg, shared);
    });
  },
};

function rewrite(body: PassBody, index: NodeIndex, node: Node, seg: string, shared: SharedInputs): boolean {
  const out = node.output![0]!;
  const type = body.graph.typeOf(out);
  const b = new PassBuilder(body);
  const ids = b.value(seg);
  if (type === undefined || ids === undefined) return false;
  const scope = scopeOf(node.name);
  const [oneFrame] = shared.get(`one_frame|${seg}`, b, () =>
    b.build(`${scopeOf(scope)}.one_frame`, (g) => [g.equal(g.reduceMin(ids, [0], false), g.reduceMax(ids, [0], false))]),
  );
  const branch = (label: string, input: string[]) => {
    const y = body.graph.freshName(`${out}/${label}`, type);
    const copy: Node = { ...node, name: `${node.name}/${label}`, input, output: [y] };
    made.add(copy);
    const yv = b.value(y)!;
    return { name: `${node.name}/${label}`, node: [copy], input: [], output: [valueInfo(yv)] };
  };
  const then = branch('no_bias', node.input!.slice(0, 3));
  const otherwise = branch('frame_bias', [...node.input!]);
  const [y] = b.build(scope, (g) =>
    g.emit('If', [oneFrame!], [{ dtype: type.dtype, shape: [...type.shape] }], {
      then_branch: { graph: then },
      else_branch: { graph: otherwise },
    }),
  );
  const done = replaceNodes(index, [node], b.nodes([[y!, out]]));
  shared.settle(done);
  return done;
}
