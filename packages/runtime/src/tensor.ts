/**
 * Host tensors: plain `{ dtype, dims, data }` records that live in JS memory,
 * and their conversion to and from ORT tensors (onnxruntime-node's in Node,
 * onnxruntime-web's in the browser: the platform's Tensor class). float16 data is
 * kept as raw IEEE half bits in a Uint16Array (the safetensors convention),
 * bool as one byte per element in a Uint8Array, int64 as a BigInt64Array.
 */
import { type OrtTensor, Tensor } from '#platform';
import { RuntimeError } from './errors.js';

export type { OrtTensor };

export interface HostDataTypes {
  float64: Float64Array;
  float32: Float32Array;
  /** Raw IEEE 754 half-precision bits. */
  float16: Uint16Array;
  int64: BigInt64Array;
  int32: Int32Array;
  int16: Int16Array;
  int8: Int8Array;
  uint8: Uint8Array;
  /** One byte per element, 0 or 1. */
  bool: Uint8Array;
}

export type HostDType = keyof HostDataTypes;

/** A tensor in host memory; `HostTensor<'int64'>` narrows `data` to BigInt64Array. */
export type HostTensor<D extends HostDType = HostDType> = D extends HostDType
  ? { readonly dtype: D; readonly dims: readonly number[]; readonly data: HostDataTypes[D] }
  : never;

export const HOST_DTYPES: readonly HostDType[] = ['float64', 'float32', 'float16', 'int64', 'int32', 'int16', 'int8', 'uint8', 'bool'];

const ARRAY_TYPES: { [D in HostDType]: new (n: number) => HostDataTypes[D] } = {
  float64: Float64Array,
  float32: Float32Array,
  float16: Uint16Array,
  int64: BigInt64Array,
  int32: Int32Array,
  int16: Int16Array,
  int8: Int8Array,
  uint8: Uint8Array,
  bool: Uint8Array,
};

export function isHostDType(s: string): s is HostDType {
  return (HOST_DTYPES as readonly string[]).includes(s);
}

export function numel(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

function checkDims(dims: readonly number[], length: number, what: string): void {
  for (const d of dims) {
    if (!Number.isInteger(d) || d < 0) {
      throw new RuntimeError('INVALID_TENSOR', `${what}: dims [${dims.join(', ')}] must be non-negative integers.`);
    }
  }
  if (numel(dims) !== length) {
    throw new RuntimeError('INVALID_TENSOR', `${what}: dims [${dims.join(', ')}] hold ${numel(dims)} elements but data has ${length}.`);
  }
}

/** Build a HostTensor, checking that `data` has the array type and length `dims` call for. */
export function hostTensor<D extends HostDType>(dtype: D, data: HostDataTypes[D], dims: readonly number[]): HostTensor<D> {
  const Ctor = ARRAY_TYPES[dtype];
  if (!(data instanceof Ctor)) {
    throw new RuntimeError(
      'INVALID_TENSOR',
      `A ${dtype} tensor needs a ${Ctor.name} for its data, got ${(data as object).constructor.name}.`,
    );
  }
  checkDims(dims, data.length, `${dtype} tensor`);
  return { dtype, dims: [...dims], data } as unknown as HostTensor<D>;
}

/** An all-zero HostTensor. */
export function zeros<D extends HostDType>(dtype: D, dims: readonly number[]): HostTensor<D> {
  return hostTensor(dtype, new ARRAY_TYPES[dtype](numel(dims)), dims);
}

/** A float32 HostTensor from numbers (copied) or a Float32Array (kept). */
export function float32(data: Float32Array | readonly number[], dims: readonly number[]): HostTensor<'float32'> {
  return hostTensor('float32', data instanceof Float32Array ? data : Float32Array.from(data), dims);
}

/** An int64 HostTensor from numbers (must be safe integers), bigints, or a BigInt64Array (kept). */
export function int64(data: BigInt64Array | readonly number[] | readonly bigint[], dims: readonly number[]): HostTensor<'int64'> {
  if (data instanceof BigInt64Array) return hostTensor('int64', data, dims);
  const out = new BigInt64Array(data.length);
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (typeof v === 'number' && !Number.isSafeInteger(v)) {
      throw new RuntimeError('INVALID_TENSOR', `int64(): element ${i} (${v}) is not a safe integer.`);
    }
    out[i] = BigInt(v);
  }
  return hostTensor('int64', out, dims);
}

/** A bool HostTensor from booleans (or a Uint8Array of 0/1, kept). */
export function bool(data: Uint8Array | readonly boolean[], dims: readonly number[]): HostTensor<'bool'> {
  return hostTensor('bool', data instanceof Uint8Array ? data : Uint8Array.from(data, (b) => (b ? 1 : 0)), dims);
}

/** True for an onnxruntime tensor (duck-typed, so a second copy of onnxruntime-common still counts). */
export function isOrtTensor(t: unknown): t is OrtTensor {
  return typeof t === 'object' && t !== null && 'type' in t && 'location' in t && 'dims' in t;
}

export function isHostTensor(t: unknown): t is HostTensor {
  return typeof t === 'object' && t !== null && 'dtype' in t && 'dims' in t && 'data' in t;
}

/**
 * Wrap a HostTensor as an ORT tensor; the data is shared, not copied. `tensor`: the Tensor class of the
 * onnxruntime it is for (default: the platform's).
 */
export function toOrt(t: HostTensor, tensor: typeof Tensor = Tensor): OrtTensor {
  checkDims(t.dims, t.data.length, `${t.dtype} tensor`);
  // ORT takes float16 as Uint16Array bits and bool as Uint8Array, as we store them.
  return new tensor(t.dtype, t.data, [...t.dims]);
}

/** Read an ORT tensor (CPU location) as a HostTensor; the data is shared, not copied. */
export function fromOrt(t: OrtTensor): HostTensor {
  if (t.location !== 'cpu' && t.location !== 'cpu-pinned') {
    throw new RuntimeError(
      'INVALID_TENSOR',
      `fromOrt() reads host tensors only; this one lives at location '${t.location}'. Call its getData() first.`,
    );
  }
  const dtype = t.type;
  if (!isHostDType(dtype)) {
    throw new RuntimeError(
      'UNSUPPORTED_DTYPE',
      `ORT tensor dtype '${dtype}' has no HostTensor form (supported: ${HOST_DTYPES.join(', ')}).`,
    );
  }
  const dims = [...t.dims];
  let data = t.data as ArrayBufferView & { length: number };
  // Where the platform has Float16Array, ORT may hand float16 back as one; keep the bits.
  if (dtype === 'float16' && !(data instanceof Uint16Array)) {
    data = new Uint16Array(data.buffer, data.byteOffset, data.length);
  }
  return hostTensor(dtype, data as HostDataTypes[typeof dtype], dims);
}
