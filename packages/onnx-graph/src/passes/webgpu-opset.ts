import type { OnnxTypes } from '../proto.js';
import { PassBuilder, SharedInputs, scopeOf } from './attention-pattern.js';
import { attrNumber, type GraphPass, type NodeIndex, type PassBody, replaceNodes, rewriteEach } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

/**
 * The ai.onnx opset a graph for onnxruntime-web's WebGPU EP declares. Its kernels (the JS EP of onnxruntime-web
 * 1.30) are registered up to opset 21: a Transpose, Reshape, Cast or Squeeze of an opset-23 model, or a Conv of
 * an opset-22 one, finds no WebGPU kernel and runs on the CPU with a copy each way.
 */
export const WEBGPU_OPSET = 21;

/** The ai.onnx ops that exist from opset 23 only. */
const OPSET_23_OPS = new Set(['Attention', 'RMSNormalization', 'RotaryEmbedding']);

/**
 * A graph for onnxruntime-web's WebGPU EP at `WEBGPU_OPSET`: the opset-23 ops it can express another way are
 * rewritten (RMSNormalization as ORT's SimplifiedLayerNormalization, the same function; a RotaryEmbedding on
 * [B, S, H*hd] with per-token tables as com.microsoft RotaryEmbedding over them, as `contribAttentionPass`
 * does), and once none is left in the model, bodies included, the model declares opset 21. An opset-23 op it
 * cannot rewrite (the opset Attention: run `contribAttentionPass` first) keeps opset 23, as before.
 *
 * What opset 21 moves onto the GPU must run there as on the CPU: a Conv gets its default dilations written out
 * (the JS EP's Conv kernel fails without them), and float32 Cos and Sin (rotary tables: angles of up to
 * thousands of radians) are computed in float64, which the JS EP has no kernels for, so they stay on WASM.
 * WGSL specifies sin and cos to 2^-11 absolute inside [-pi, pi] and not at all outside; float64 rounded to
 * float32 is the CPU's float32 result to an ulp.
 */
export const webgpuOpsetPass: GraphPass = {
  name: 'webgpu-opset',
  run: (body) => {
    const shared = new SharedInputs();
    const n = rewriteEach(body, (node, index) => {
      if ((node.domain ?? '') !== '') return false;
      if (node.opType === 'RMSNormalization') return rmsNorm(index, node);
      if (node.opType === 'RotaryEmbedding') return rotary(body, index, node, shared);
      if (node.opType === 'Conv') return convDilations(body, index, node);
      if (node.opType === 'Cos' || node.opType === 'Sin') return trigInFloat64(body, index, node);
      return false;
    });
    const g = body.graph;
    if (g.opset > WEBGPU_OPSET && !anyNode(g.snapshot().nodes, (x) => (x.domain ?? '') === '' && OPSET_23_OPS.has(x.opType ?? ''))) {
      g.lowerOpset(WEBGPU_OPSET);
    }
    return n;
  },
};

function rmsNorm(index: NodeIndex, node: Node): boolean {
  const simplified: Node = { ...node, opType: 'SimplifiedLayerNormalization', name: `${node.name ?? 'RMSNormalization'}/simplified` };
  return replaceNodes(index, [node], [simplified]);
}

function rotary(body: PassBody, index: NodeIndex, node: Node, shared: SharedInputs): boolean {
  const [xName, cosName, sinName, positions] = node.input ?? [];
  const out = node.output?.[0];
  const numHeads = attrNumber(node, 'num_heads', 0);
  if (!xName || !cosName || !sinName || positions || !out || attrNumber(node, 'rotary_embedding_dim', 0) !== 0) return false;
  const b = new PassBuilder(body);
  const [x, cos, sin] = [b.value(xName), b.value(cosName), b.value(sinName)];
  if (x === undefined || cos === undefined || sin === undefined || x.rank !== 3 || numHeads <= 0 || cos.rank !== 3) return false;
  if (cos.dtype !== x.dtype || sin.dtype !== x.dtype) return false;
  const scope = scopeOf(node.name);
  const [cache, sinCache, positionIds] = shared.get(`rotary|${cosName}|${sinName}`, b, () =>
    b.build(`${scope}.webgpu_rotary`, (g) => {
      const c = g.perTokenRotaryCache(cos, sin);
      return [c.cos, c.sin, c.positionIds];
    }),
  );
  const rotated = b.build(scope, (g) =>
    g.contribRotaryEmbedding(
      x,
      positionIds!,
      { cos: cache!, sin: sinCache! },
      { interleaved: attrNumber(node, 'interleaved', 0) === 1, numHeads },
    ),
  );
  const done = replaceNodes(index, [node], b.nodes([[rotated, out]]));
  shared.settle(done);
  return done;
}

function convDilations(body: PassBody, index: NodeIndex, node: Node): boolean {
  if ((node.attribute ?? []).some((a) => a.name === 'dilations')) return false;
  const w = body.graph.typeOf(node.input?.[1] ?? '');
  if (w === undefined) return false;
  const dilations = Array.from({ length: w.shape.length - 2 }, () => 1);
  return replaceNodes(
    index,
    [node],
    [{ ...node, attribute: [...(node.attribute ?? []), { name: 'dilations', type: 7, ints: dilations }] }],
  );
}

function trigInFloat64(body: PassBody, index: NodeIndex, node: Node): boolean {
  const [input] = node.input ?? [];
  const out = node.output?.[0];
  const b = new PassBuilder(body);
  const x = input ? b.value(input) : undefined;
  if (x === undefined || x.dtype !== 'float32' || !out) return false;
  const y = b.build(scopeOf(node.name), (g) => {
    const wide = g.cast(x, 'float64');
    return g.cast(g.emit(node.opType!, [wide], [{ dtype: 'float64', shape: wide.shape }])[0]!, 'float32');
  });
  return replaceNodes(index, [node], b.nodes([[y, out]]));
}

/** Whether any node of `nodes` or of a body nested in them matches. */
function anyNode(nodes: readonly Node[], match: (n: Node) => boolean): boolean {
  return nodes.some(
    (n) =>
      match(n) ||
      (n.attribute ?? []).some((a) => (a.g ? anyNode(a.g.node ?? [], match) : (a.graphs ?? []).some((g) => anyNode(g.node ?? [], match)))),
  );
}
