import { bf16ToF32, f16ToF32 } from '@vlmkit/safetensors';
import { GraphError } from './errors.js';
import { type QuantizedBlocks, type QuantizeOptions, quantizedShapes } from './quant.js';
import { quantizeRows } from './quant-kernel.js';
import { tensorBytes } from './tensor-bytes.js';
import { lazyTensor, type TensorRef } from './tensor-ref.js';

/** A float tensor's values as float32 (f16/bf16/f64 converted), read from wherever it lives. */
export async function floatValues(ref: TensorRef): Promise<Float32Array> {
  const bytes = await tensorBytes(ref);
  const n = ref.shape.reduce((a, b) => a * b, 1);
  const aligned = (bytes.byteOffset % 4 === 0 ? bytes : bytes.slice()) as Uint8Array;
  switch (ref.dtype) {
    case 'float32':
      return new Float32Array(aligned.buffer, aligned.byteOffset, n);
    case 'float16':
      return f16ToF32(new Uint16Array(aligned.buffer, aligned.byteOffset, n));
    case 'bfloat16':
      return bf16ToF32(new Uint16Array(aligned.buffer, aligned.byteOffset, n));
    case 'float64':
      return Float32Array.from(new Float64Array(aligned.byteOffset % 8 === 0 ? aligned.buffer : aligned.slice().buffer, 0, n));
    default:
      throw new GraphError('BAD_ARGUMENT', `quantize: a ${ref.dtype} tensor [${ref.shape.join(', ')}] is not a float weight`);
  }
}

/** The MatMulNBits initializers of one weight, as lazy tensors. */
export interface QuantizedRefs {
  b: TensorRef;
  scales: TensorRef;
  zeroPoints: TensorRef | undefined;
}

/**
 * Lazy MatMulNBits tensors for the [N, K] weight `ref`: the first of them to
 * be loaded reads the weight (only it: the model is never held in float32),
 * quantizes it, and keeps the other parts until they are loaded too.
 */
export function quantizedRefs(ref: TensorRef, o: QuantizeOptions): QuantizedRefs {
  if (ref.shape.length !== 2) {
    throw new GraphError('PARAMETER_SHAPE', `quantize: a Linear weight is [out, in], found [${ref.shape.join(', ')}]`);
  }
  const [n, k] = ref.shape as [number, number];
  const shapes = quantizedShapes(n, k, o);
  const parts = o.symmetric ? 2 : 3;
  let pending: Promise<QuantizedBlocks> | undefined;
  let taken = 0;
  const take = async <T>(pick: (q: QuantizedBlocks) => T): Promise<T> => {
    pending ??= quantizeTensor(ref, n, k, o);
    const p = pending;
    if (++taken === parts) {
      pending = undefined; // every part handed out: let the blocks go
      taken = 0;
    }
    return pick(await p);
  };
  return {
    b: lazyTensor('uint8', shapes.b, () => take((q) => q.packed)),
    scales: lazyTensor('float32', shapes.scales, () => take((q) => q.scales)),
    zeroPoints: o.symmetric ? undefined : lazyTensor('uint8', shapes.zeroPoints, () => take((q) => q.zeroPoints!)),
  };
}

/** `ref` quantized from its stored bytes: 16-bit floats are widened a row at a time, never as a whole float32 copy. */
async function quantizeTensor(ref: TensorRef, n: number, k: number, o: QuantizeOptions): Promise<QuantizedBlocks> {
  if (ref.dtype !== 'bfloat16' && ref.dtype !== 'float16') return quantizeRows({ dtype: 'float32', data: await floatValues(ref) }, n, k, o);
  const bytes = await tensorBytes(ref);
  const aligned = (bytes.byteOffset % 2 === 0 ? bytes : bytes.slice()) as Uint8Array;
  return quantizeRows({ dtype: ref.dtype, data: new Uint16Array(aligned.buffer, aligned.byteOffset, n * k) }, n, k, o);
}
