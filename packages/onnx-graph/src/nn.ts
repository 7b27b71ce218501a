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
 *
 * The MatMul is marked 'linear' (`g.mark`): `quantizeLinearPass` turns the
 * marked ones into MatMulNBits on block-quantized weights.
 */
export function linear(g: Graph, x: Value, w: Weights, name: string, opts: { bias?: boolean; in?: number; out: number }): Value {
  // Parameters are named in the caller's scope (`blocks.3.attn.qkv.weight`), nodes inside the module's scope.
  const inDim = opts.in ?? lastDim(x, `${w.fullName(name)} input`);
  const weight = g.param(w, `${name}.weight`, [opts.out, inDim]);
  const bias = (opts.bias ?? true) ? g.param(w, `${name}.bias`, [opts.out]) : undefined;
  return g.scope(name, () => {
    const y = g.mark(g.matmul(x, g.transpose(asDType(g, weight, x), [1, 0])), LINEAR);
    return bias ? g.add(y, asDType(g, bias, x)) : y;
  });
}

/** The mark of the MatMul of a Linear layer (`nn.linear`), which `quantizeLinearPass` quantizes. */
export const LINEAR = 'linear';

/** The mark of a decoder's LM head (`h W^T`, a MatMul or Gemm), quantized by `quantizeLinearPass` as its `lmHead` says. */
export const LM_HEAD = 'lm_head';

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

/**
 * torch.nn.LayerNorm over x's last dimension (`name.weight`, `name.bias`). In a 16-bit graph
 * (`floatConvertPass`) it normalises in float32 with float32 weight and bias and rounds once at the end, as
 * torch's CPU and CUDA kernels do.
 */
export function layerNorm(g: Graph, x: Value, w: Weights, name: string, eps: number): Value {
  const d = lastDim(x, w.fullName(name));
  const [weight, bias] = [paramAs(g, w, `${name}.weight`, [d], x), paramAs(g, w, `${name}.bias`, [d], x)];
  return g.scope(name, () => g.layerNorm(x, weight, bias, eps));
}

/**
 * RMSNorm over x's last dimension (`name.weight`): x / sqrt(mean(x^2) + eps) * weight. In a 16-bit graph
 * (`floatConvertPass`) it follows HF's Ernie4_5 / Granite / Llama RMSNorm: normalised in float32, rounded to
 * the 16-bit type, then times the weight in it (`weight * hidden.to(float32)...to(input_dtype)`).
 */
export function rmsNorm(g: Graph, x: Value, w: Weights, name: string, eps: number): Value {
  const d = lastDim(x, w.fullName(name));
  const weight = paramAs(g, w, `${name}.weight`, [d], x);
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

/**
 * Additive attention bias from a bool mask (true = attend): 0 where allowed, a large negative elsewhere
 * (float16: its lowest finite value, -65504, since -1e9 would be -inf there).
 */
export function maskToBias(g: Graph, mask: Value, dtype: Value['dtype'] = 'float32'): Value {
  return g.where(mask, g.scalar(0, dtype), g.scalar(dtype === 'float16' ? -65504 : -1e9, dtype));
}

export { type CachedAttentionInputs, causalChunkedAttention, type StepAttentionSizes, stepAttention } from './nn-attention.js';

/**
 * KV heads repeated for the query heads: [B, Hkv, T, hd] -> [B, Hkv*rep, T, hd], each KV head `rep`
 * times in a row (the GQA grouping of the opset-23 Attention op and HF's repeat_kv). Identity for rep 1.
 */
export function repeatKvHeads(g: Graph, kv: Value, rep: number): Value {
  if (rep === 1) return kv;
  const [b, h, t, hd] = [kv.dim(0), kv.dim(1), kv.dim(2), kv.dim(3)];
  if (typeof h !== 'number' || typeof hd !== 'number') {
    throw new GraphError('BAD_ARGUMENT', `repeatKvHeads needs static heads and head size, got ${kv}`);
  }
  return g.scope('repeat_kv', () => {
    // [B, Hkv, 1, T, hd] broadcast against [1, 1, rep, 1, 1] (Expand broadcasts both ways): constant shapes only.
    const e = g.expand(g.unsqueeze(kv, [2]), [1, 1, rep, 1, 1], [b, h, rep, t, hd]);
    return g.reshape(e, [0, h * rep, -1, hd], [b, h * rep, t, hd]);
  });
}
