import { GraphError } from './errors.js';
import type { Graph } from './graph.js';
import { layerNorm, paramAs, rmsNorm } from './nn.js';
import type { OpSet } from './ops-contrib.js';
import type { Value } from './value.js';
import type { Weights } from './weights.js';

/**
 * Building blocks with an `ops` choice (`OpSet`): the standard ops, or one com.microsoft kernel where it
 * fits. Both give the same numbers up to float rounding; the fixture tests of each component compare them.
 */

/** A residual stream about to be normed: `hidden + addend` (addend undefined: `hidden` alone). */
export interface Residual {
  hidden: Value;
  addend?: Value | undefined;
}

/**
 * `sum = hidden + addend`, then RMSNorm(sum) with `name.weight`, as a pre-norm decoder does at every
 * residual: on 'contrib' one SkipSimplifiedLayerNormalization, on 'onnx' Add + `nn.rmsNorm`. Without an
 * addend it is `nn.rmsNorm` of `hidden` (sum = hidden).
 */
export function residualRmsNorm(
  g: Graph,
  r: Residual,
  w: Weights,
  name: string,
  eps: number,
  ops: OpSet = 'onnx',
): { sum: Value; normed: Value } {
  const { hidden, addend } = r;
  if (addend === undefined) return { sum: hidden, normed: rmsNorm(g, hidden, w, name, eps) };
  if (ops === 'contrib') {
    // One kernel; a 16-bit input is normalised and scaled in float32 inside and rounded once.
    const weight = paramAs(g, w, `${name}.weight`, [hidden.dim(-1) as number], hidden);
    const { out, sum } = g.scope(name, () => g.skipSimplifiedLayerNorm(addend, hidden, weight, eps));
    return { sum, normed: out };
  }
  const sum = g.add(hidden, addend);
  return { sum, normed: rmsNorm(g, sum, w, name, eps) };
}

/** The same with LayerNorm (`name.weight`, `name.bias`; `nn.layerNorm`): SkipLayerNormalization on 'contrib'. */
export function residualLayerNorm(
  g: Graph,
  r: Residual,
  w: Weights,
  name: string,
  eps: number,
  ops: OpSet = 'onnx',
): { sum: Value; normed: Value } {
  const { hidden, addend } = r;
  if (addend === undefined) return { sum: hidden, normed: layerNorm(g, hidden, w, name, eps) };
  if (ops === 'contrib') {
    const d = hidden.dim(-1) as number;
    const [weight, bias] = [paramAs(g, w, `${name}.weight`, [d], hidden), paramAs(g, w, `${name}.bias`, [d], hidden)];
    const { out, sum } = g.scope(name, () => g.skipLayerNorm(addend, hidden, weight, bias, eps));
    return { sum, normed: out };
  }
  const sum = g.add(hidden, addend);
  return { sum, normed: layerNorm(g, sum, w, name, eps) };
}

/** `hidden + addend` as a plain Add (where the next op is not a norm), or `hidden` alone. */
export function settle(g: Graph, r: Residual): Value {
  return r.addend === undefined ? r.hidden : g.add(r.hidden, r.addend);
}

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
