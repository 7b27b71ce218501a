import type { OnnxTypes } from '../proto.js';
import { PassBuilder } from './attention-pattern.js';
import { type GraphPass, type NodeIndex, type PassBody, replaceNodes, rewriteEach } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

/** sqrt(2 / pi) and GELU's cubic coefficient, as torch's tanh approximation writes them. */
const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);
const CUBIC = 0.044715;

/**
 * Gelu(approximate='tanh') as standard arithmetic: x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), the same
 * function (0.5 (1 + tanh(z)) = sigmoid(2z)). onnxruntime-web 1.30's WebGPU Gelu kernel computes the tanh form
 * with an error of up to ~8e-5 (measured in headless Chromium, SwiftShader adapter), enough to move a tiny
 * model's logits past 1e-4; its Mul/Add/Sigmoid kernels are exact to a rounding. Exact GELU (erf) is left alone.
 */
export const webgpuGeluPass: GraphPass = {
  name: 'webgpu-gelu',
  run: (body) => rewriteEach(body, (node, index) => node.opType === 'Gelu' && rewrite(body, index, node)),
};

function rewrite(body: PassBody, index: NodeIndex, node: Node): boolean {
  const approximate = node.attribute?.find((a) => a.name === 'approximate');
  const tanh = approximate?.s !== undefined && approximate.s !== null && new TextDecoder().decode(approximate.s) === 'tanh';
  const [input] = node.input ?? [];
  const out = node.output?.[0];
  if ((node.domain ?? '') !== '' || !tanh || !input || !out) return false;
  const b = new PassBuilder(body);
  const x = b.value(input);
  if (x === undefined) return false;
  const y = b.build(`${node.name ?? 'Gelu'}/webgpu`, (g) => {
    const cubic = g.add(g.mul(g.mul(x, x), g.scalar(CUBIC, x.dtype)), g.scalar(1, x.dtype));
    const z = g.mul(g.mul(x, cubic), g.scalar(2 * SQRT_2_OVER_PI, x.dtype));
    return g.mul(x, g.sigmoid(z));
  });
  return replaceNodes(index, [node], b.nodes([[y, out]]));
}
