import { describe, expect, it } from 'vitest';
import { floatData } from '../dtype.js';
import { Graph } from '../graph.js';
import { layerNorm, rmsNorm } from '../nn.js';
import { type TensorRef, tensorFromArray } from '../tensor-ref.js';
import { passDiffs, randn } from '../test-utils/ort.js';
import type { Value } from '../value.js';
import { Weights } from '../weights.js';
import { floatConvertPass } from './float-convert.js';
import { applyPasses } from './rewrite.js';
import { skipLayerNormPass } from './skip-norm.js';

const [N, D, L] = [7, 16, 3];
const feeds = { x: { dtype: 'float32' as const, dims: [N, D], data: randn(N * D, 11) } };

/** LayerNorm weights near 1 and biases near 0 (a checkpoint's), stored in `dtype`. */
function weights(modules: string[], dtype: 'float32' | 'float16' = 'float32'): Weights {
  const entries: Record<string, TensorRef> = {};
  modules.forEach((m, i) => {
    entries[`${m}.weight`] = tensorFromArray(
      dtype,
      [D],
      floatData(
        dtype,
        randn(D, 200 + i).map((v) => 1 + 0.1 * v),
      ),
    );
    entries[`${m}.bias`] = tensorFromArray(
      dtype,
      [D],
      floatData(
        dtype,
        randn(D, 300 + i).map((v) => 0.1 * v),
      ),
    );
  });
  return Weights.from(entries);
}

/** A pre-norm encoder on [N, D] tokens (the ERNIE vision tower's layout): x = x + tanh(ln(x)) per layer, final ln. */
function preNormStack(computeDtype: 'float32' | 'float16', weightDtype: 'float32' | 'float16' = 'float32'): Graph {
  // Built in float32; the 16-bit form is floatConvertPass's.
  const g = new Graph();
  const w = weights([...Array.from({ length: L }, (_, l) => `layers.${l}.norm`), 'ln'], weightDtype);
  let x: Value = g.input('x', 'float32', ['patches', D]);
  for (let l = 0; l < L; l++) {
    x = g.scope(`layers.${l}`, () => g.add(x, g.tanh(layerNorm(g, x, w.sub(`layers.${l}`), 'norm', 1e-6))));
  }
  g.output(layerNorm(g, x, w, 'ln', 1e-6), 'y');
  if (computeDtype !== 'float32') applyPasses(g, [floatConvertPass(computeDtype)]);
  return g;
}

const ops = (g: Graph) => g.nodes.map((n) => `${n.domain ? `${n.domain}:` : ''}${n.opType}`);
const count = (g: Graph, op: string) => ops(g).filter((o) => o === op).length;

describe('skipLayerNormPass: Add then LayerNorm -> SkipLayerNormalization', () => {
  it.each([
    ['float32 weights', 'float32'],
    ['float16 weights cast to float32', 'float16'],
  ] as const)('float32, %s: every add before a norm fused, same numbers (1e-5)', async (_, weightDtype) => {
    const { rewrites, diffs } = await passDiffs(() => preNormStack('float32', weightDtype), [skipLayerNormPass], feeds);
    expect(rewrites).toEqual({ 'skip-layer-norm': L });
    console.log(`[skip-layer-norm] float32 max |diff| ${diffs.y}`);
    expect(diffs.y).toBeLessThan(1e-5);
    const g = preNormStack('float32', weightDtype);
    applyPasses(g, [skipLayerNormPass]);
    expect(count(g, 'LayerNormalization')).toBe(1);
    expect(count(g, 'com.microsoft:SkipLayerNormalization')).toBe(L);
    expect(count(g, 'Add')).toBe(0);
    const fused = g.nodes.filter((n) => n.opType === 'SkipLayerNormalization');
    expect(fused.map((n) => [n.input!.length, n.output!.length])).toEqual([...Array(L - 1).fill([4, 4]), [4, 1]]);
  });

  // 16-bit: nn.layerNorm runs in float32 with float32 weight and bias, the kernel takes them in float16 (each
  // rounded once from the parameter); the two differ by float16 rounding: a few units in the last place (2^-9).
  it.each([
    // Casts per fused norm: float32 parameters, the two activation Casts give way to two Casts of the
    // parameters to float16; float16 parameters, those and the parameters' two Casts to float32 go.
    ['float32 weights', 'float32', 0],
    ['float16 weights', 'float16', -4],
  ] as const)('float16, %s: the Cast / LayerNormalization / Cast form fused, same numbers up to float16 rounding (4e-3)', async (_, weightDtype, castsPerNorm) => {
    const { rewrites, diffs } = await passDiffs(() => preNormStack('float16', weightDtype), [skipLayerNormPass], feeds);
    expect(rewrites).toEqual({ 'skip-layer-norm': L });
    console.log(`[skip-layer-norm] float16 (${weightDtype} weights) max |diff| ${diffs.y}`);
    expect(diffs.y).toBeLessThan(4e-3);
    const g = preNormStack('float16', weightDtype);
    const before = count(g, 'Cast');
    applyPasses(g, [skipLayerNormPass]);
    expect(count(g, 'com.microsoft:SkipLayerNormalization')).toBe(L);
    expect(count(g, 'Cast')).toBe(before + L * castsPerNorm);
  });

  it('leaves an Add that broadcasts, an Add before an RMSNorm and a norm after something else', () => {
    const g = new Graph();
    const w = weights(['a', 'b']);
    const x = g.input('x', 'float32', [N, D]);
    const bias = g.constant('float32', [D], randn(D, 3));
    const n1 = layerNorm(g, g.add(x, bias), w, 'a', 1e-6);
    const n2 = layerNorm(g, g.mul(n1, x), w, 'b', 1e-6);
    const rms = rmsNorm(g, g.add(n2, x), Weights.from({ 'c.weight': tensorFromArray('float32', [D], randn(D, 4)) }), 'c', 1e-6);
    g.output(rms, 'y');
    expect(applyPasses(g, [skipLayerNormPass])).toEqual({ 'skip-layer-norm': 0 });
    expect(count(g, 'LayerNormalization')).toBe(2);
    expect(count(g, 'Add')).toBe(2);
  });
});
