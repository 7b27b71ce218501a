import { dtypeSize, typedArrayFor } from './dtype.js';
import { floatValues } from './quant-ref.js';
import { tensorBytes } from './tensor-bytes.js';
import { lazyTensor, type TensorRef } from './tensor-ref.js';

/**
 * Routed experts' weights packed as com.microsoft MoE reads them (`g.moe`): lazy tensors, read and packed when
 * the model is written.
 */

/**
 * The `fc1` of `g.moe` from per-expert gate and up weights [I, D] each (PyTorch layout, any float dtype): float32
 * [E, 2I, D] with row 2i the gate's row i and row 2i+1 the up's row i. Lazy: read and packed when the model is
 * written (a copy of the routed experts' gate/up weights, once, in the graph cache).
 */
export function interleavedGateUp(gates: readonly TensorRef[], ups: readonly TensorRef[]): TensorRef {
  const [I, D] = gates[0]!.shape as [number, number];
  const E = gates.length;
  return lazyTensor('float32', [E, 2 * I, D], async () => {
    const out = new Float32Array(E * 2 * I * D);
    for (let e = 0; e < E; e++) {
      const [gate, up] = [await floatValues(gates[e]!), await floatValues(ups[e]!)];
      for (let i = 0; i < I; i++) {
        out.set(gate.subarray(i * D, (i + 1) * D), (e * 2 * I + 2 * i) * D);
        out.set(up.subarray(i * D, (i + 1) * D), (e * 2 * I + 2 * i + 1) * D);
      }
    }
    return out;
  });
}

/** Per-expert tensors of one shape stacked on a new first axis, float32 (the `fc2` of `g.moe` from the down weights). */
export function stackedExperts(refs: readonly TensorRef[]): TensorRef {
  const shape = refs[0]!.shape;
  const n = shape.reduce((a, b) => a * b, 1);
  return lazyTensor('float32', [refs.length, ...shape], async () => {
    const out = new Float32Array(refs.length * n);
    for (let e = 0; e < refs.length; e++) out.set(await floatValues(refs[e]!), e * n);
    return out;
  });
}

/**
 * Per-expert tensors of one dtype stacked on a new first axis, bytes as stored, the rows of each expert's parts
 * interleaved: with m parts, row r of expert e is row floor(r / m) of its part r % m (each part [rows / m,
 * width] row-major, any shape of that size). QMoE's fc1 from the gate and up Linears' MatMulNBits blocks (row
 * 2i the gate's row i), its fc2 from the down ones (one part).
 */
export function interleavedRows(experts: readonly (readonly TensorRef[])[], shape: readonly [number, number, number]): TensorRef {
  const [E, rows, width] = shape;
  const dtype = experts[0]![0]!.dtype;
  const m = experts[0]!.length;
  const rowBytes = width * dtypeSize(dtype);
  return lazyTensor(dtype, shape, async () => {
    const data = typedArrayFor(dtype, E * rows * width);
    const out = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    for (let e = 0; e < E; e++) {
      const parts = await Promise.all(experts[e]!.map((ref) => tensorBytes(ref)));
      for (let r = 0; r < rows; r++) {
        const from = Math.floor(r / m) * rowBytes;
        out.set(parts[r % m]!.subarray(from, from + rowBytes), (e * rows + r) * rowBytes);
      }
    }
    return data;
  });
}

/** Tensors of one dtype and row width stacked along their first axis, bytes as stored: `shape` is the result's. */
export function stackedRows(refs: readonly TensorRef[], shape: readonly number[]): TensorRef {
  const dtype = refs[0]!.dtype;
  const size = shape.reduce((a, b) => a * b, 1);
  return lazyTensor(dtype, shape, async () => {
    const data = typedArrayFor(dtype, size);
    const out = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    let at = 0;
    for (const ref of refs) {
      const bytes = await tensorBytes(ref);
      out.set(bytes, at);
      at += bytes.byteLength;
    }
    return data;
  });
}
