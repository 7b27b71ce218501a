import { GraphError } from './errors.js';
import type { Graph } from './graph.js';
import type { Value } from './value.js';
import type { Weights } from './weights.js';

/**
 * Building blocks shared by the components (so components never import each
 * other). Each reads its parameters from `w` under the module's local names,
 * scoped like the reference module (`fc1.weight`, `fc1.bias`).
 */

/**
 * y = x W^T + b with W in PyTorch layout [out, in]. ORT folds the transpose of
 * a constant weight once at load. `in` defaults to x's last dimension (which
 * must then be static); `out` is required: the weight's shape is declared
 * here, not discovered from the tensor, so a dry run can list it.
 */
export function linear(g: Graph, x: Value, w: Weights, name: string, opts: { bias?: boolean; in?: number; out: number }): Value {
  // Parameters are named in the caller's scope (`blocks.3.attn.qkv.weight`), nodes inside the module's scope.
  const inDim = opts.in ?? lastDim(x, `${w.fullName(name)} input`);
  const weight = g.param(w, `${name}.weight`, [opts.out, inDim]);
  const bias = (opts.bias ?? true) ? g.param(w, `${name}.bias`, [opts.out]) : undefined;
  return g.scope(name, () => {
    const y = g.matmul(x, g.transpose(asDType(g, weight, x), [1, 0]));
    return bias ? g.add(y, asDType(g, bias, x)) : y;
  });
}

function asDType(g: Graph, p: Value, like: Value): Value {
  return p.dtype === like.dtype ? p : g.cast(p, like.dtype);
}

/** x's last dimension, which sizes a parameter: it must be a number, not a symbolic name. */
function lastDim(x: Value, what: string): number {
  const d = x.shape[x.shape.length - 1];
  if (typeof d !== 'number') {
    throw new GraphError('BAD_ARGUMENT', `${what}: the last dimension of '${x.name}' is ${String(d)}; a parameter needs a static size`);
  }
  return d;
}

/** A parameter of `shape` cast to `like`'s dtype (bf16/fp16 checkpoints computed in float32). */
export function paramAs(g: Graph, w: Weights, name: string, shape: readonly number[], like: Value): Value {
  return asDType(g, g.param(w, name, shape), like);
}

/** torch.nn.LayerNorm over x's last dimension (`name.weight`, `name.bias`). */
export function layerNorm(g: Graph, x: Value, w: Weights, name: string, eps: number): Value {
  const d = lastDim(x, w.fullName(name));
  const [weight, bias] = [paramAs(g, w, `${name}.weight`, [d], x), paramAs(g, w, `${name}.bias`, [d], x)];
  return g.scope(name, () => g.layerNorm(x, weight, bias, eps));
}

/** RMSNorm over x's last dimension (`name.weight`): x / sqrt(mean(x^2) + eps) * weight. */
export function rmsNorm(g: Graph, x: Value, w: Weights, name: string, eps: number): Value {
  const weight = paramAs(g, w, `${name}.weight`, [lastDim(x, w.fullName(name))], x);
  return g.scope(name, () => g.rmsNorm(x, weight, eps));
}

/** SiLU-gated MLP with a packed gate_up projection [2I, D] (gate rows first), then down [D, I]; biases only with `bias`. */
export function gatedMlp(
  g: Graph,
  x: Value,
  w: Weights,
  names: { gateUp: string; down: string },
  intermediate: number,
  opts: { bias?: boolean } = {},
): Value {
  const bias = opts.bias ?? false;
  const d = lastDim(x, w.fullName(names.gateUp));
  const gu = linear(g, x, w, names.gateUp, { bias, in: d, out: 2 * intermediate });
  const [gate, up] = g.split(gu, [intermediate, intermediate], -1);
  return linear(g, g.mul(g.silu(gate!), up!), w, names.down, { bias, in: intermediate, out: d });
}

/** Additive attention bias from a bool mask (true = attend): 0 where allowed, a large negative elsewhere. */
export function maskToBias(g: Graph, mask: Value, dtype: Value['dtype'] = 'float32'): Value {
  return g.where(mask, g.scalar(0, dtype), g.scalar(-1e9, dtype));
}
