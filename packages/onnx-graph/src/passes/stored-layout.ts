import { MS_DOMAIN } from '../graph-core.js';
import type { OnnxTypes } from '../proto.js';
import { type GraphPass, makeNode, type NodeIndex, type PassBody, replaceNodes, rewriteEach } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

/**
 * MatMul(x, Transpose(W)) of a float32 weight -> com.microsoft FusedMatMul(x, W, transB 1): the product read from
 * the weight as the checkpoint stores it ([out, in], PyTorch's Linear layout). Without it the transposed copy is
 * folded into a second copy of the weight (the graph cache's data file); with it the weight is memory-mapped
 * from the checkpoint. ORT's CPU kernels compute a many-row product with the same packed kernel either way
 * (equal bits); a one-row product (a decode step) goes through that kernel too instead of MLAS's matrix-vector
 * one, so decode logits differ in the last bits.
 *
 * Matched: a standard MatMul on float32 whose B is Transpose(perm [1, 0]) of a rank-2 float32 initializer, in
 * a float32 graph. A 16-bit checkpoint computed in float32 (a Cast between) is left alone: its float32 form has
 * to be made somewhere (`storedLayoutCastPass` chooses where). Run it after `quantizeLinearPass` and the passes
 * that match Linear layers by their MatMul + Transpose (`moeExpertsPass`).
 */
export const storedLayoutPass: GraphPass = {
  name: 'stored-layout',
  run: (body) => rewriteEach(body, (node, index) => node.opType === 'MatMul' && rewrite(body, index, node, false)),
};

/**
 * As `storedLayoutPass`, and also MatMul(x, Transpose(Cast(W))) of a 16-bit rank-2 weight -> FusedMatMul(x,
 * Cast(W), transB 1): the float32 copy folded at build keeps the checkpoint's [out, in] layout. ORT's CPU
 * kernel packs B's panels on the fly (prepacking off); from a memory-mapped [in, out] copy each packed row
 * comes from another 4 KiB page, from [out, in] rows are contiguous. The same bits for many rows; one row
 * (a decode step) differs in the last bits as above, so the profiles list it for vision towers.
 */
export const storedLayoutCastPass: GraphPass = {
  name: 'stored-layout-cast',
  run: (body) => rewriteEach(body, (node, index) => node.opType === 'MatMul' && rewrite(body, index, node, true)),
};

function rewrite(body: PassBody, index: NodeIndex, node: Node, casts: boolean): boolean {
  const g = body.graph;
  const [x, b] = node.input ?? [];
  if (!x || !b || (node.domain ?? '') !== '' || g.computeDtype !== 'float32' || g.typeOf(x)?.dtype !== 'float32') return false;
  const t = index.producer(b);
  const perm = t?.attribute?.find((a) => a.name === 'perm')?.ints?.map(Number);
  if (t === undefined || t.opType !== 'Transpose' || (t.domain ?? '') !== '' || perm?.length !== 2 || perm[0] !== 1 || perm[1] !== 0) {
    return false;
  }
  const w = t.input?.[0] ?? '';
  if (!storedFloat32(body, index, w, casts)) return false;
  const fused = makeNode('FusedMatMul', [x, w], node.output ?? [], {
    name: g.freshName(`${node.name ?? 'MatMul'}/transB`),
    domain: MS_DOMAIN,
    attrs: { transB: { int: 1 } },
  });
  return replaceNodes(index, index.onlyReadBy(b, node) ? [t, node] : [node], [fused]);
}

/** `w` is a rank-2 float32 initializer, or (`casts`) a Cast to float32 of a rank-2 16-bit one. */
function storedFloat32(body: PassBody, index: NodeIndex, w: string, casts: boolean): boolean {
  const g = body.graph;
  const ref = g.initializerRef(w);
  if (ref !== undefined) return ref.dtype === 'float32' && ref.shape.length === 2;
  const cast = casts ? index.producer(w) : undefined;
  if (cast === undefined || cast.opType !== 'Cast' || (cast.domain ?? '') !== '' || g.typeOf(w)?.dtype !== 'float32') return false;
  const src = g.initializerRef(cast.input?.[0] ?? '');
  return src !== undefined && (src.dtype === 'bfloat16' || src.dtype === 'float16') && src.shape.length === 2;
}
