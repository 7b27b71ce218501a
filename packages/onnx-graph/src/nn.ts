import type { Graph } from './graph.js';
import type { Value } from './value.js';
import type { Weights } from './weights.js';

/**
 * Building blocks shared by the components (so components never import each
 * other). Each reads its parameters from `w` under the module's local names,
 * scoped like the reference module (`fc1.weight`, `fc1.bias`).
 */

/** y = x W^T + b with W in PyTorch layout [out, in]. ORT folds the transpose of a constant weight once at load. */
export function linear(g: Graph, x: Value, w: Weights, name: string, opts: { bias?: boolean; in?: number; out?: number } = {}): Value {
  // Parameters are named in the caller's scope (`blocks.3.attn.qkv.weight`), nodes inside the module's scope.
  const weight = g.param(w, `${name}.weight`, shapeOf(opts.out, opts.in));
  const bias = (opts.bias ?? true) ? g.param(w, `${name}.bias`, opts.out !== undefined ? [opts.out] : undefined) : undefined;
  return g.scope(name, () => {
    const y = g.matmul(x, g.transpose(asDType(g, weight, x), [1, 0]));
    return bias ? g.add(y, asDType(g, bias, x)) : y;
  });
}

function asDType(g: Graph, p: Value, like: Value): Value {
  return p.dtype === like.dtype ? p : g.cast(p, like.dtype);
}

function shapeOf(out?: number, inp?: number): (number | string)[] | undefined {
  if (out === undefined && inp === undefined) return undefined;
  return [out ?? 'out', inp ?? 'in'];
}

/** A parameter cast to `x`'s dtype (bf16/fp16 checkpoints computed in float32). */
export function paramAs(g: Graph, w: Weights, name: string, like: Value): Value {
  return asDType(g, g.param(w, name), like);
}

/** torch.nn.LayerNorm (`name.weight`, `name.bias`). */
export function layerNorm(g: Graph, x: Value, w: Weights, name: string, eps: number): Value {
  const [weight, bias] = [paramAs(g, w, `${name}.weight`, x), paramAs(g, w, `${name}.bias`, x)];
  return g.scope(name, () => g.layerNorm(x, weight, bias, eps));
}

/** RMSNorm (`name.weight`): x / sqrt(mean(x^2) + eps) * weight. */
export function rmsNorm(g: Graph, x: Value, w: Weights, name: string, eps: number): Value {
  const weight = paramAs(g, w, `${name}.weight`, x);
  return g.scope(name, () => g.rmsNorm(x, weight, eps));
}

/** SiLU-gated MLP with a packed gate_up projection [2I, D] (gate rows first), then down [D, I]. */
export function gatedMlp(g: Graph, x: Value, w: Weights, names: { gateUp: string; down: string }, intermediate: number): Value {
  const gu = linear(g, x, w, names.gateUp, { bias: false });
  const [gate, up] = g.split(gu, [intermediate, intermediate], -1);
  return linear(g, g.mul(g.silu(gate!), up!), w, names.down, { bias: false });
}

/** Additive attention bias from a bool mask (true = attend): 0 where allowed, a large negative elsewhere. */
export function maskToBias(g: Graph, mask: Value, dtype: Value['dtype'] = 'float32'): Value {
  return g.where(mask, g.scalar(0, dtype), g.scalar(-1e9, dtype));
}
