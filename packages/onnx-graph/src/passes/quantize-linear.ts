import { GraphError } from '../errors.js';
import type { Graph } from '../graph.js';
import { MS_DOMAIN } from '../graph-core.js';
import { LINEAR, LM_HEAD } from '../nn.js';
import type { OnnxTypes } from '../proto.js';
import { type QuantizeOptions, type QuantizeRequest, quantizeOptions } from '../quant.js';
import { quantizedRefs } from '../quant-ref.js';
import type { Value } from '../value.js';
import { attrNumber, type GraphPass, makeNode, type NodeIndex, type PassBody, replaceNodes, rewriteEach } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

/**
 * Block-quantized Linear layers (com.microsoft MatMulNBits, `quant.ts` for the layouts): every MatMul
 * `nn.linear` marked 'linear', and the LM head (marked 'lm_head', a MatMul or a Gemm with transB) when
 * `lmHead`, whose activations are float32 and whose weight is a 2-D float initializer (cast or not, read
 * as `x W^T`), becomes MatMulNBits on `<weight>.quant`, `<weight>.scales` and `<weight>.zero_points`,
 * computed from the weight when the model is written (`quantizedRefs`). Nothing else is touched: a MatMul
 * no builder marked (a MoE router) stays float. The float weight is dropped from the model unless
 * something else still reads it (a tied embedding table), and the bias stays float.
 *
 * Quantization changes the numbers by the quantization error (see `quant.ts`); the graph is otherwise the same.
 */
export function quantizeLinearPass(request: QuantizeRequest | QuantizeOptions): GraphPass {
  const o = quantizeOptions(request);
  // The three tensors of each weight, made once for the whole model (a weight read in several bodies).
  const packed = new Map<string, { b: Value; scales: Value; zeroPoints: Value | undefined }>();
  const quantized = (g: Graph, weight: string) => {
    const seen = packed.get(weight);
    if (seen !== undefined) return seen;
    const refs = quantizedRefs(g.initializerRef(weight)!, o);
    // Listed where the float weight was: the model's tensors keep the order a build writes them in.
    const p = {
      b: g.initializer(`${weight}.quant`, refs.b, weight),
      scales: g.initializer(`${weight}.scales`, refs.scales, weight),
      zeroPoints: refs.zeroPoints && g.initializer(`${weight}.zero_points`, refs.zeroPoints, weight),
    };
    packed.set(weight, p);
    return p;
  };
  return {
    name: 'quantize-linear',
    key: JSON.stringify(o),
    run(body) {
      const g = body.graph;
      if (g.computeDtype !== 'float32') {
        // MatMulNBits here takes float32 activations: refuse rather than silently keep float weights.
        throw new GraphError(
          'BAD_ARGUMENT',
          `quantize needs computeDtype 'float32' (got '${g.computeDtype}'): quantized weights are built for float32 activations`,
        );
      }
      const count = rewriteEach(body, (node, index) => {
        const mark = g.markOf(node.output?.[0] ?? '');
        if (mark !== LINEAR && !(mark === LM_HEAD && o.lmHead)) return false;
        const m = linearForm(body, index, node);
        if (m === undefined) return false;
        const p = quantized(g, m.weight);
        const q = makeNode('MatMulNBits', [m.x, p.b.name, p.scales.name, p.zeroPoints?.name ?? ''], node.output ?? [], {
          name: g.freshName(`${scopeOf(node.name)}MatMulNBits`),
          domain: MS_DOMAIN,
          attrs: {
            K: { int: m.k },
            N: { int: m.n },
            bits: { int: o.bits },
            block_size: { int: o.blockSize },
            accuracy_level: { int: o.accuracyLevel },
          },
        });
        return replaceNodes(index, [...m.drop, node], [q]);
      });
      return count;
    },
  };
}

/** `node` as x W^T with W [N, K] a float initializer (the forms nn.linear and the LM head write), or undefined. */
function linearForm(
  body: PassBody,
  index: NodeIndex,
  node: Node,
): { x: string; weight: string; n: number; k: number; drop: Node[] } | undefined {
  const g = body.graph;
  const [x, b, c] = node.input ?? [];
  if (!x || !b || (node.domain ?? '') !== '' || g.typeOf(x)?.dtype !== 'float32') return undefined;
  const drop: Node[] = [];
  let w = b;
  if (node.opType === 'MatMul') {
    // B = Transpose(perm [1, 0]) of W.
    const t = index.producer(b);
    const perm = t?.attribute?.find((a) => a.name === 'perm')?.ints?.map(Number);
    if (t?.opType !== 'Transpose' || perm?.length !== 2 || perm[0] !== 1 || perm[1] !== 0) return undefined;
    if (index.onlyReadBy(b, node)) drop.push(t);
    w = t.input?.[0] ?? '';
  } else if (node.opType === 'Gemm') {
    // Gemm(A, W, transB 1), no C, alpha and beta 1.
    const plain = attrNumber(node, 'transA', 0) === 0 && attrNumber(node, 'alpha', 1) === 1 && attrNumber(node, 'beta', 1) === 1;
    if (c || !plain || attrNumber(node, 'transB', 0) !== 1) return undefined;
  } else {
    return undefined;
  }
  // W itself, or a Cast of it (a 16-bit checkpoint tensor computed in float32).
  const cast = index.producer(w);
  if (cast?.opType === 'Cast' && (cast.domain ?? '') === '') {
    if (drop.length === 1 ? index.onlyReadBy(w, drop[0]!) : index.onlyReadBy(w, node)) drop.unshift(cast);
    w = cast.input?.[0] ?? '';
  }
  const ref = g.initializerRef(w);
  if (ref === undefined || ref.shape.length !== 2 || !['float32', 'float16', 'bfloat16', 'float64'].includes(ref.dtype)) return undefined;
  const [n, k] = ref.shape as [number, number];
  return { x, weight: w, n, k, drop };
}

/** The scope prefix of a node name, with its dot (`layers.0.mlp.up_proj.` for `layers.0.mlp.up_proj.MatMul`). */
function scopeOf(name: string | null | undefined): string {
  const dot = (name ?? '').lastIndexOf('.');
  return dot < 0 ? '' : name!.slice(0, dot + 1);
}
