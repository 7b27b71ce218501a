import type { Graph } from '../graph.js';
import { causalChunkedAttention, type StepAttentionSizes, stepAttention } from '../nn-attention.js';
import { everyNode } from '../nodes.js';
import type { OnnxTypes } from '../proto.js';
import type { Value } from '../value.js';
import { type OpAttention, opAttention, PassBuilder, scopeOf } from './attention-pattern.js';
import { type GraphPass, type NodeIndex, type PassBody, replaceNodes, rewriteEach } from './rewrite.js';

/** Query-row blocks of a long prompt's attention (`causalChunkedAttention`). */
const PROMPT_CHUNKS = 4;
/** The shortest prompt run in blocks (32 rows per block at least; below, the extra nodes outweigh the saving). */
const CHUNKED_PROMPT_ROWS = 128;

/**
 * A decoder's attention over a slot cache -> the attention that does not copy it, on ORT's CPU EP. The opset-23
 * Attention with past key / value writes past + new into its present outputs, a copy of the whole cache per
 * layer and step. Where nothing reads those outputs (a decoder whose cache is 'append': it returns the new
 * rows only, and the caller writes them into its slot buffers), this pass puts an If in the op's place: one
 * new position per row reads the cache in place (`nn.stepAttention`); a prompt of at least 128 positions runs
 * in 4 causal blocks of query rows, each against the keys it can see (`nn.causalChunkedAttention`); shorter
 * prompts keep the op.
 *
 * Matched: 3-D float32 Attention with a bool mask and past key / value whose present outputs are unread.
 * 16-bit graphs keep the op (its kernels accumulate in float32). The blocked prompt path needs the mask to be
 * causal in the new positions, which the graph does not show: apply this pass to causal decoders only
 * (moe-decoder's, whose mask is `causalPaddingMask`), as `APPEND_ATTENTION_PASSES` says.
 */
export const appendAttentionPass: GraphPass = {
  name: 'append-attention',
  run: (body) =>
    rewriteEach(body, (node, index) => {
      const a = made.has(node) ? undefined : opAttention(body, node);
      return a !== undefined && rewrite(body, index, a);
    }),
};

/** The nodes this pass wrote (the If's branches keep an Attention each): never rewritten again. */
const made = new WeakSet<OnnxTypes.INodeProto>();

function rewrite(body: PassBody, index: NodeIndex, a: OpAttention): boolean {
  if (index.isUsed(a.presentKey) || index.isUsed(a.presentValue)) return false;
  const b = new PassBuilder(body);
  const operands = [a.q, a.k, a.v, a.mask, a.pastKey, a.pastValue].map((n) => b.value(n));
  if (operands.some((x) => x === undefined)) return false;
  const [q, k, v, mask, pastKey, pastValue] = operands as Value[];
  if ([q, k, v, pastKey, pastValue].some((x) => x!.dtype !== 'float32')) return false;
  const inputs = { q: q!, k: k!, v: v!, past: { key: pastKey!, value: pastValue! }, mask: mask! };
  const sizes: StepAttentionSizes = { numHeads: a.numHeads, kvNumHeads: a.kvNumHeads, headDim: a.headDim, scale: a.scale };
  const out = b.build(scopeOf(scopeOf(a.node.name)), (g) => {
    const rows = (s: Graph) => s.shapeOf(q!, 1, 2);
    const rowsAre = (s: Graph, test: 'equal' | 'greaterOrEqual', n: number) =>
      s.squeeze(s[test](rows(s), s.constant('int64', [1], [n])), [0]);
    const op = (s: Graph) =>
      s.scope('attn', () =>
        s.attention(q!, k!, v!, { qNumHeads: a.numHeads, kvNumHeads: a.kvNumHeads, scale: a.scale, mask, pastKey, pastValue }),
      ).out;
    return g.if(
      rowsAre(g, 'equal', 1),
      (s) => [stepAttention(s, inputs, sizes)],
      (s) =>
        s.if(
          rowsAre(s, 'greaterOrEqual', CHUNKED_PROMPT_ROWS),
          (c) => [causalChunkedAttention(c, inputs, sizes, PROMPT_CHUNKS)],
          (c) => [op(c)],
        ),
    )[0]!;
  });
  const insert = b.nodes([[out, a.out]]);
  if (!replaceNodes(index, [a.node], insert)) return false;
  for (const n of everyNode(insert)) made.add(n);
  return true;
}
