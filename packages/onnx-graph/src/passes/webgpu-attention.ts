import { MS_DOMAIN } from '../graph-core.js';
import type { OnnxTypes } from '../proto.js';
import { PassBuilder } from './attention-pattern.js';
import { attrNumber, type GraphPass, type NodeIndex, type PassBody, replaceNodes, rewriteEach } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

const MARK = '/webgpu';

/**
 * com.microsoft MultiHeadAttention as onnxruntime-web 1.30's WebGPU kernel computes it right:
 * - its attention_bias expanded to the full [B, num_heads, S, T]: the contract lets it broadcast over batch and
 *   heads ([1, 1, S, T], as a vision tower's block-diagonal mask and `maskToBias` make it), and the kernel fails
 *   on anything else ("Expect attention_bias shape (batch_size, num_heads, sequence_length,
 *   total_sequence_length)");
 * - a `scale` other than 1/sqrt(head_size) folded into q (q * scale * sqrt(head_size), the attribute dropped):
 *   the kernel ignores the attribute and runs with the default, silently (measured in headless Chromium,
 *   SwiftShader adapter: outputs equal to the default scale's, not the asked one's).
 * The same values up to one float rounding of q; the expanded bias costs B * num_heads * S * T elements where
 * the broadcast one cost S * T, so a profile applies this where the kernel needs it (WebGPU) only.
 */
export const webgpuAttentionPass: GraphPass = {
  name: 'webgpu-attention',
  run: (body) => rewriteEach(body, (node, index) => node.opType === 'MultiHeadAttention' && rewrite(body, index, node)),
};

function rewrite(body: PassBody, index: NodeIndex, node: Node): boolean {
  const inputs = node.input ?? [];
  if (node.domain !== MS_DOMAIN || !inputs[0] || (node.name ?? '').endsWith(MARK)) return false;
  const b = new PassBuilder(body);
  const query = b.value(inputs[0]);
  const attnBias = inputs[5] ? b.value(inputs[5]) : undefined;
  if (query === undefined || query.rank !== 3 || (inputs[5] && attnBias?.rank !== 4)) return false;
  const heads = attrNumber(node, 'num_heads', 0);
  const hidden = query.dim(2);
  const scale = node.attribute?.find((a) => a.name === 'scale') ? attrNumber(node, 'scale', 0) : undefined;
  const headSize = typeof hidden === 'number' ? hidden / heads : undefined;
  // The factor q is multiplied by: undefined where the kernel's default is what is asked (or head_size is not known).
  const factor =
    scale !== undefined && headSize !== undefined && Math.abs(scale * Math.sqrt(headSize) - 1) > 1e-7
      ? scale * Math.sqrt(headSize)
      : undefined;
  const fullBias = attnBias === undefined || (attnBias.dim(0) === query.dim(0) && attnBias.dim(1) === heads);
  if (fullBias && factor === undefined) return false;
  const name = `${node.name ?? 'MultiHeadAttention'}${MARK}`;
  const [q, bias] = b.build(name, (g) => {
    const q = factor === undefined ? query : g.mul(query, g.scalar(factor, query.dtype));
    if (fullBias) return [q, attnBias];
    // Expand broadcasts both ways: [1, 1, S, T] against [B, N, 1, 1] is [B, N, S, T].
    const target = g.concat([g.shapeOf(query, 0, 1), g.ints([heads, 1, 1])], 0);
    return [q, g.expand(attnBias!, target, [query.dim(0), heads, attnBias!.dim(2), attnBias!.dim(3)])];
  });
  const mha: Node = {
    ...node,
    name,
    input: inputs.map((x, i) => (i === 0 ? q.name : i === 5 && bias !== undefined ? bias.name : x)),
    attribute: (node.attribute ?? []).filter((a) => factor === undefined || a.name !== 'scale'),
  };
  return replaceNodes(index, [node], [...b.nodes(), mha]);
}
