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
import { skipRmsNormPass } from './skip-norm.js';

const [B, S, D, L] = [2, 5, 16, 3];
const feeds = { x: { dtype: 'float32' as const, dims: [B, S, D], data: randn(B * S * D, 7) } };

/** Norm weights near 1 (a checkpoint's), stored in `dtype`. */
function weights(names: string[], dtype: 'float32' | 'float16' = 'float32'): Weights {
  const entries: Record<string, TensorRef> = {};
  names.forEach((n, i) => {
    const data = randn(D, 100 + i).map((v) => 1 + 0.1 * v);
    entries[n] = tensorFromArray(dtype, [D], floatData(dtype, data));
  });
  return Weights.from(entries);
}

/** nanoGPT's block with only a norm and a branch: x = x + tanh(norm(x)) per layer, then the final norm. */
function preNormStack(computeDtype: 'float32' | 'float16', weightDtype: 'float32' | 'float16' = 'float32', extraOut = false): Graph {
  // Built in float32; the 16-bit form is floatConvertPass's.
  const g = new Graph();
  const w = weights([...Array.from({ length: L }, (_, l) => `layers.${l}.norm.weight`), 'norm.weight'], weightDtype);
  let x: Value = g.input('x', 'float32', [B, 'seq', D]);
  const sums: Value[] = [];
  for (let l = 0; l < L; l++) {
    x = g.scope(`layers.${l}`, () => g.add(x, g.tanh(rmsNorm(g, x, w.sub(`layers.${l}`), 'norm', 1e-6))));
    sums.push(x);
  }
  g.output(rmsNorm(g, x, w, 'norm', 1e-6), 'y');
  if (extraOut) g.output(sums[0]!, 'h1');
  if (computeDtype !== 'float32') applyPasses(g, [floatConvertPass(computeDtype)]);
  return g;
}

const ops = (g: Graph) => g.nodes.map((n) => `${n.domain ? `${n.domain}:` : ''}${n.opType}`);
const count = (g: Graph, op: string) => ops(g).filter((o) => o === op).length;

describe('skipRmsNormPass: Add then RMSNorm -> SkipSimplifiedLayerNormalization', () => {
  // Float32: the fused kernel sums and normalises as the two ops do, up to the order of the float32 sums.
  it.each([
    ['float32 weights', 'float32'],
    ['float16 weights cast to float32', 'float16'],
  ] as const)('float32, %s: every add before a norm fused, same numbers (1e-5)', async (_, weightDtype) => {
    const { rewrites, diffs } = await passDiffs(() => preNormStack('float32', weightDtype), [skipRmsNormPass], feeds);
    expect(rewrites).toEqual({ 'skip-rms-norm': L });
    console.log(`[skip-rms-norm] float32 max |diff| ${diffs.y}`);
    expect(diffs.y).toBeLessThan(1e-5);
    const g = preNormStack('float32', weightDtype);
    applyPasses(g, [skipRmsNormPass]);
    // Layer 0's norm reads the input, not an Add: it stays.
    expect(count(g, 'RMSNormalization')).toBe(1);
    expect(count(g, 'com.microsoft:SkipSimplifiedLayerNormalization')).toBe(L);
    expect(count(g, 'Add')).toBe(0);
    expect(g.snapshot().domains).toContain('com.microsoft');
  });

  it("keeps the sum (4th output) only where the stream reads on; names each node in its norm's scope", () => {
    const g = preNormStack('float32');
    applyPasses(g, [skipRmsNormPass]);
    const fused = g.nodes.filter((n) => n.opType === 'SkipSimplifiedLayerNormalization');
    const names = ['layers.1.norm', 'layers.2.norm', 'norm'].map((s) => `${s}.SkipSimplifiedLayerNormalization`);
    expect(fused.map((n) => n.name)).toEqual(names);
    // Layers 1..L-1's norms: the sum goes on to the next add; the final norm's sum is read by nothing else.
    expect(fused.map((n) => n.output!.length)).toEqual([...Array(L - 1).fill(4), 1]);
  });

  it('keeps a sum the graph returns', async () => {
    const { rewrites, diffs } = await passDiffs(() => preNormStack('float32', 'float32', true), [skipRmsNormPass], feeds);
    expect(rewrites).toEqual({ 'skip-rms-norm': L });
    expect(diffs.h1).toBe(0);
    expect(diffs.y).toBeLessThan(1e-5);
  });

  // 16-bit: nn.rmsNorm rounds the normalised value before the weight multiply (HF), the kernel rounds once;
  // they differ by float16 rounding: at most 2 units in the last place (2^-9) of outputs below 4.
  it('float16: the Cast / RMSNormalization / Cast / Mul form fused, same numbers up to float16 rounding (4e-3)', async () => {
    const { rewrites, diffs } = await passDiffs(() => preNormStack('float16', 'float32'), [skipRmsNormPass], feeds);
    expect(rewrites).toEqual({ 'skip-rms-norm': L });
    console.log(`[skip-rms-norm] float16 max |diff| ${diffs.y}`);
    expect(diffs.y).toBeLessThan(4e-3);
    const g = preNormStack('float16');
    applyPasses(g, [skipRmsNormPass]);
    expect(count(g, 'com.microsoft:SkipSimplifiedLayerNormalization')).toBe(L);
    expect(count(g, 'Mul')).toBe(1);
  });

  it('leaves an Add that broadcasts, an Add before a LayerNorm and a norm after something else', () => {
    const g = new Graph();
    const w = weights(['a.weight', 'b.weight']);
    const x = g.input('x', 'float32', [B, S, D]);
    const bias = g.constant('float32', [D], randn(D, 3));
    const n1 = rmsNorm(g, g.add(x, bias), w, 'a', 1e-6);
    const n2 = rmsNorm(g, g.mul(n1, x), w, 'b', 1e-6);
    const ln = layerNorm(
      g,
      g.add(n2, x),
      Weights.from({ 'c.weight': tensorFromArray('float32', [D], randn(D, 4)), 'c.bias': tensorFromArray('float32', [D], randn(D, 5)) }),
      'c',
      1e-6,
    );
    g.output(ln, 'y');
    expect(applyPasses(g, [skipRmsNormPass])).toEqual({ 'skip-rms-norm': 0 });
    expect(count(g, 'RMSNormalization')).toBe(2);
    expect(count(g, 'Add')).toBe(2);
  });
});
