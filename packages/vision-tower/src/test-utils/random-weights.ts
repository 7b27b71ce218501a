import { type TensorRef, tensorFromArray, Weights } from '@vlmkit/onnx-graph';
import { f16ToF32, f32ToF16 } from '@vlmkit/safetensors';
import type { ParameterSpec } from '../types.js';
import { randn } from './ort.js';

/**
 * Random parameters for `specs`: matrices N(0, 1/fan_in), biases N(0, 0.1),
 * norm weights 1 + N(0, 0.1). `float16` stores them as f16 (the float32 copy
 * holds the rounded values, so a reference sees the same numbers).
 */
export function randomWeights(specs: readonly ParameterSpec[], seed: number, dtype: 'float32' | 'float16' = 'float32') {
  const float32 = new Map<string, Float32Array>();
  const refs = new Map<string, TensorRef>();
  for (const [i, { name, shape }] of specs.entries()) {
    const n = shape.reduce((a, b) => a * b, 1);
    const isNormWeight = shape.length === 1 && /norm\d?\.weight$|(^|\.)ln\.weight$/.test(name);
    const std = shape.length === 2 ? 1 / Math.sqrt(shape[1]!) : 0.1;
    let data = randn(n, seed * 1000 + i, std);
    if (isNormWeight) data = data.map((v) => 1 + v);
    if (dtype === 'float16') {
      const bits = f32ToF16(data);
      float32.set(name, f16ToF32(bits));
      refs.set(name, tensorFromArray('float16', shape, bits));
    } else {
      float32.set(name, data);
      refs.set(name, tensorFromArray('float32', shape, data));
    }
  }
  return { weights: Weights.from(refs), float32 };
}
