import { onnxDataType } from '../dtype.js';
import { MS_DOMAIN, type OutputSpec } from '../graph-core.js';
import type { OnnxTypes } from '../proto.js';
import { attrNumber, type GraphPass, makeNode, type NodeIndex, type PassBody, replaceNodes, rewriteEach } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

/**
 * Add then RMSNorm -> com.microsoft SkipSimplifiedLayerNormalization (onnxscript:
 * rewriter/ort_fusions/skip_normalization.py): a pre-norm block's residual add and the norm after it in one
 * kernel, whose 4th output is the sum where the Add's result is read elsewhere (the residual stream).
 * It matches both forms `nn.rmsNorm` emits: one RMSNormalization, and the 16-bit one (Cast to float32,
 * RMSNormalization with a unit scale, Cast back, Mul by the weight); the fused kernel normalises a 16-bit
 * input in float32 inside and rounds once.
 */
export const skipRmsNormPass: GraphPass = {
  name: 'skip-rms-norm',
  run: (body) => rewriteEach(body, (node, index) => node.opType === 'RMSNormalization' && fuse(body, index, rmsPattern(body, index, node))),
};

/**
 * Add then LayerNormalization -> com.microsoft SkipLayerNormalization, the same way: both forms of
 * `nn.layerNorm` (the 16-bit one runs LayerNormalization in float32 between two Casts, with float32 weight
 * and bias; the fused kernel takes them in the input's dtype, cast once from the parameters).
 */
export const skipLayerNormPass: GraphPass = {
  name: 'skip-layer-norm',
  run: (body) =>
    rewriteEach(body, (node, index) => node.opType === 'LayerNormalization' && fuse(body, index, layerPattern(body, index, node))),
};

/** A matched Add + norm: what the fused node reads and writes, and the nodes it replaces. */
interface Match {
  opType: 'SkipSimplifiedLayerNormalization' | 'SkipLayerNormalization';
  add: Node;
  /** The norm node (names the fused one) and every other node of the pattern after the Add. */
  norm: Node;
  rest: Node[];
  /** Weight (and bias) in the Add's dtype; the nodes that make them after the Add (moved up) or anew. */
  params: string[];
  paramNodes: Node[];
  /** The name the norm's result goes by (read by the nodes after the pattern). */
  out: string;
  epsilon: number;
}

/** The RMSNorm pattern ending at `norm`, or undefined. */
function rmsPattern(body: PassBody, index: NodeIndex, norm: Node): Match | undefined {
  if (!isStandard(norm) || !lastAxisInFloat32(body, norm)) return undefined;
  const [x, scale] = norm.input ?? [];
  const epsilon = attrNumber(norm, 'epsilon', 1e-5);
  const direct = index.producer(x ?? '');
  if (direct?.opType === 'Add' && isStandard(direct)) {
    const add = addOf(body, index, direct, norm);
    const gamma = add && scale ? paramIn(index, scale, add) : undefined;
    if (add === undefined || gamma === undefined) return undefined;
    return { opType: 'SkipSimplifiedLayerNormalization', add, norm, rest: [norm], ...gamma, out: norm.output![0]!, epsilon };
  }
  // 16-bit: Mul(Cast(RMSNormalization(Cast(sum, float32), ones), half), weight).
  const wrap = halfWrap(body, index, norm);
  if (wrap === undefined || scale === undefined || !isOnes(body, scale)) return undefined;
  const mul = soleReader(index, wrap.castOut.output![0]!);
  if (mul?.opType !== 'Mul' || !isStandard(mul) || mul.input?.[0] !== wrap.castOut.output![0]) return undefined;
  const weight = mul.input?.[1] ?? '';
  const gamma = paramIn(index, weight, wrap.add);
  if (gamma === undefined || body.graph.typeOf(weight)?.dtype !== wrap.dtype) return undefined;
  return {
    opType: 'SkipSimplifiedLayerNormalization',
    add: wrap.add,
    norm,
    rest: [wrap.castIn, norm, wrap.castOut, mul],
    ...gamma,
    out: mul.output![0]!,
    epsilon,
  };
}

/** The LayerNorm pattern ending at `norm`, or undefined. */
function layerPattern(body: PassBody, index: NodeIndex, norm: Node): Match | undefined {
  if (!isStandard(norm) || !lastAxisInFloat32(body, norm)) return undefined;
  const [x, scale, bias] = norm.input ?? [];
  if (scale === undefined || scale === '' || bias === '') return undefined;
  const epsilon = attrNumber(norm, 'epsilon', 1e-5);
  const direct = index.producer(x ?? '');
  if (direct?.opType === 'Add' && isStandard(direct)) {
    const add = addOf(body, index, direct, norm);
    if (add === undefined) return undefined;
    const found = [scale, bias].flatMap((p) => (p === undefined ? [] : [paramIn(index, p, add)]));
    if (found.some((p) => p === undefined)) return undefined;
    const params = found.map((p) => p!);
    return {
      opType: 'SkipLayerNormalization',
      add,
      norm,
      rest: [norm],
      params: params.flatMap((p) => p.params),
      paramNodes: params.flatMap((p) => p.paramNodes),
      out: norm.output![0]!,
      epsilon,
    };
  }
  // 16-bit: Cast(LayerNormalization(Cast(sum, float32), weight32, bias32), half); the fused op takes them in half.
  const wrap = halfWrap(body, index, norm);
  if (wrap === undefined) return undefined;
  const found = [scale, bias].flatMap((p) => (p === undefined ? [] : [paramAsHalf(body, index, p, wrap.dtype, wrap.add, norm)]));
  if (found.some((p) => p === undefined)) return undefined;
  const params = found.map((p) => p!);
  return {
    opType: 'SkipLayerNormalization',
    add: wrap.add,
    norm,
    rest: [wrap.castIn, norm, wrap.castOut, ...params.flatMap((p) => p.dead)],
    params: params.map((p) => p.name),
    paramNodes: params.flatMap((p) => p.make),
    out: wrap.castOut.output![0]!,
    epsilon,
  };
}

/** Replaces a match by one fused node (plus the parameter nodes it reads); false when there is none. */
function fuse(body: PassBody, index: NodeIndex, m: Match | undefined): boolean {
  if (m === undefined) return false;
  const [a, b] = m.add.input as [string, string];
  const sum = m.add.output![0]!;
  const pattern = new Set([m.add, ...m.rest]);
  const sumRead = body.outputs.has(sum) || index.readersOf(sum).some((r) => !pattern.has(r));
  // Inputs as the builders wrote them: x = the branch just added, skip = the stream; outputs: out, mean,
  // inv_std_var (unused), sum.
  const fused = makeNode(m.opType, [b, a, ...m.params], sumRead ? [m.out, '', '', sum] : [m.out], {
    name: body.graph.freshName(`${scopeOf(m.norm)}${m.opType}`),
    domain: MS_DOMAIN,
    attrs: { epsilon: { float: m.epsilon } },
  });
  const moved = m.paramNodes.filter((n) => body.nodes.includes(n));
  return replaceNodes(index, [m.add, ...m.rest, ...moved], [...m.paramNodes, fused]);
}

/**
 * `add` when it is a residual add the fused ops take: two operands of one float dtype and one shape (the
 * kernels broadcast `skip` only in ways a residual stream never needs), rank 2 or 3, read by `norm`.
 */
function addOf(body: PassBody, index: NodeIndex, add: Node, norm: Node): Node | undefined {
  const [a, b] = add.input ?? [];
  const [ta, tb] = [body.graph.typeOf(a ?? ''), body.graph.typeOf(b ?? '')];
  if (ta === undefined || tb === undefined || !sameType(ta, tb)) return undefined;
  if (!['float32', 'float16', 'bfloat16'].includes(ta.dtype) || (ta.shape.length !== 2 && ta.shape.length !== 3)) return undefined;
  return index.readersOf(add.output![0]!).includes(norm) ? add : undefined;
}

/** The 16-bit form around `norm`: Cast(Add, float32) -> norm -> Cast(back), each read by the next alone. */
function halfWrap(
  body: PassBody,
  index: NodeIndex,
  norm: Node,
): { add: Node; castIn: Node; castOut: Node; dtype: OutputSpec['dtype'] } | undefined {
  const castIn = index.producer(norm.input?.[0] ?? '');
  if (castIn?.opType !== 'Cast' || !isStandard(castIn) || !index.onlyReadBy(castIn.output![0]!, norm)) return undefined;
  const add = index.producer(castIn.input?.[0] ?? '');
  const dtype = body.graph.typeOf(castIn.input?.[0] ?? '')?.dtype;
  if (add?.opType !== 'Add' || !isStandard(add) || (dtype !== 'float16' && dtype !== 'bfloat16')) return undefined;
  if (body.graph.typeOf(castIn.output![0]!)?.dtype !== 'float32') return undefined;
  const castOut = soleReader(index, norm.output![0]!);
  if (castOut?.opType !== 'Cast' || !isStandard(castOut) || body.graph.typeOf(castOut.output![0]!)?.dtype !== dtype) return undefined;
  const checked = addOf(body, index, add, castIn);
  return checked && { add: checked, castIn, castOut, dtype };
}

/**
 * A weight or bias the fused node can read where the Add stands: made before the Add, or by a node reading
 * only values from outside the body (a Cast of an initializer), which moves up with the fused node.
 */
function paramIn(index: NodeIndex, name: string, add: Node): { params: string[]; paramNodes: Node[] } | undefined {
  const p = index.producer(name);
  if (p === undefined || index.position(p) < index.position(add)) return { params: [name], paramNodes: [] };
  const outside = (p.input ?? []).every((i) => i === '' || index.producer(i) === undefined);
  return outside && (p.attribute ?? []).every((a) => !a.g) ? { params: [name], paramNodes: [p] } : undefined;
}

/**
 * A float32 weight or bias of the 16-bit LayerNorm in `dtype`, as the fused op reads it: the parameter
 * itself when the float32 value is a Cast of a `dtype` parameter, else one Cast of the parameter. `dead`:
 * the float32 Cast, when nothing else reads it.
 */
function paramAsHalf(
  body: PassBody,
  index: NodeIndex,
  name: string,
  dtype: OutputSpec['dtype'],
  add: Node,
  norm: Node,
): { name: string; make: Node[]; dead: Node[] } | undefined {
  const p = index.producer(name);
  const fromCast = p?.opType === 'Cast' && isStandard(p) ? p.input![0]! : undefined;
  const source = fromCast ?? name;
  const sourceType = body.graph.typeOf(source);
  if (sourceType === undefined || !['float32', 'float16', 'bfloat16'].includes(sourceType.dtype)) return undefined;
  const sourceMaker = index.producer(source);
  if (sourceMaker !== undefined && index.position(sourceMaker) >= index.position(add)) return undefined;
  const after = p !== undefined && index.position(p) > index.position(add);
  const dead = p !== undefined && fromCast !== undefined && after && index.onlyReadBy(name, norm) ? [p] : [];
  if (sourceType.dtype === dtype) return { name: source, make: [], dead };
  const nodeName = body.graph.freshName(`${scopeOf(norm)}Cast`);
  const cast = body.graph.freshName(`${nodeName}/out`, { dtype, shape: sourceType.shape });
  const node = makeNode('Cast', [source], [cast], { name: nodeName, attrs: { to: { int: onnxDataType(dtype) } } });
  return { name: cast, make: [node], dead };
}

/** The scope `node` was built in (`decoder.layers.3.input_layernorm.`): new nodes are named in it, as a builder would. */
function scopeOf(node: Node): string {
  const name = node.name ?? '';
  return name.slice(0, name.lastIndexOf('.') + 1);
}

/** Normalises over the last axis, with float32 statistics (stash_type 1, the default). */
function lastAxisInFloat32(body: PassBody, norm: Node): boolean {
  const rank = body.graph.typeOf(norm.input?.[0] ?? '')?.shape.length;
  const axis = attrNumber(norm, 'axis', -1);
  return rank !== undefined && (axis === -1 || axis === rank - 1) && attrNumber(norm, 'stash_type', 1) === 1;
}

/** `name` is an initializer of ones (the unit scale of the 16-bit RMSNorm). */
function isOnes(body: PassBody, name: string): boolean {
  const ref = body.graph.snapshot().initializers.find((e) => e.name === name)?.ref;
  if (ref?.dtype !== 'float32' || ref.kind !== 'data') return false;
  return Array.prototype.every.call(ref.data, (v: number) => v === 1);
}

/** The one node reading `name`, when nothing else reads or returns it. */
function soleReader(index: NodeIndex, name: string): Node | undefined {
  const r = index.readersOf(name);
  return r.length === 1 && index.onlyReadBy(name, r[0]!) ? r[0] : undefined;
}

function isStandard(node: Node): boolean {
  return (node.domain ?? '') === '' || node.domain === 'ai.onnx';
}

function sameType(a: OutputSpec, b: OutputSpec): boolean {
  return a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}
