/**
 * Element types, their sizes, and the typed arrays that hold them.
 * F16 and BF16 are kept as raw bits in a Uint16Array (JS has no 16-bit float
 * array in Node 20); U8 and BOOL share Uint8Array.
 */
import type { ByteSource } from './source.js';

export type DType = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'BOOL';

type TypedArrayCtor = {
  new (length: number): TensorData;
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): TensorData;
  readonly BYTES_PER_ELEMENT: number;
};

/** Each dtype: its name as ONNX, onnxruntime and this project's graph and host tensors spell it, and its array. */
const ELEMENTS = {
  F64: ['float64', Float64Array],
  F32: ['float32', Float32Array],
  F16: ['float16', Uint16Array],
  BF16: ['bfloat16', Uint16Array],
  I64: ['int64', BigInt64Array],
  I32: ['int32', Int32Array],
  I16: ['int16', Int16Array],
  I8: ['int8', Int8Array],
  U8: ['uint8', Uint8Array],
  BOOL: ['bool', Uint8Array],
} as const satisfies Record<DType, readonly [string, TypedArrayCtor]>;

const byDType = <T>(f: (e: (typeof ELEMENTS)[DType]) => T) =>
  Object.fromEntries(Object.entries(ELEMENTS).map(([d, e]) => [d, f(e)])) as Record<DType, T>;

export type ElementType = (typeof ELEMENTS)[DType][0];

/** Each dtype's element type name (F32 -> 'float32'). */
export const ELEMENT_TYPE: Readonly<Record<DType, ElementType>> = byDType((e) => e[0]);

/** The dtype of each element type ('float32' -> F32): ELEMENT_TYPE the other way round. */
export const DTYPE_OF = Object.fromEntries(Object.entries(ELEMENTS).map(([d, e]) => [e[0], d])) as Readonly<Record<ElementType, DType>>;

const ARRAY_OF: Record<DType, TypedArrayCtor> = byDType((e) => e[1]);

/** Bytes per element. */
export const DTYPE_SIZE: Record<DType, number> = byDType((e) => e[1].BYTES_PER_ELEMENT);

export type TensorData = Float64Array | Float32Array | Uint16Array | BigInt64Array | Int32Array | Int16Array | Int8Array | Uint8Array;

export interface Tensor {
  dtype: DType;
  shape: number[];
  data: TensorData;
}

export interface TensorInfo {
  name: string;
  dtype: DType;
  shape: number[];
  /** The file that holds the tensor: its absolute path, or its source's name (a URL, a picked file) when it has none. */
  file: string;
  /** Where to read the bytes when the file has no path (a Blob, a URL): its ByteSource. Absent for a local file. */
  source?: ByteSource;
  /** Absolute offset of the data in the file: 8 + headerLength + data_offsets[0]. */
  byteOffset: number;
  byteLength: number;
}

export const DTYPES = Object.keys(DTYPE_SIZE) as DType[];

export function isDType(x: unknown): x is DType {
  return typeof x === 'string' && Object.hasOwn(DTYPE_SIZE, x);
}

/** Dtypes the safetensors format defines that this package does not read (yet). */
export const UNSUPPORTED_DTYPES: readonly string[] = [
  'U16',
  'U32',
  'U64',
  'C64',
  'F8_E5M2',
  'F8_E4M3',
  'F8_E8M0',
  'F6_E2M3',
  'F6_E3M2',
  'F4',
];

/**
 * Data-section order of the Python/Rust library (safetensors 0.8 `prepare`):
 * dtypes in descending order of its Dtype enum, which puts wider elements
 * first, so every tensor lands aligned to its element size.
 */
export const DTYPE_WRITE_ORDER: readonly DType[] = ['I64', 'F64', 'F32', 'I32', 'BF16', 'F16', 'I16', 'I8', 'U8', 'BOOL'];

/** The typed array class that holds `dtype` (e.g. 'Uint16Array' for BF16). */
export function arrayNameOf(dtype: DType): string {
  return ARRAY_OF[dtype].name;
}

/** True when `data` is the typed array class that holds `dtype`. */
export function dataMatches(dtype: DType, data: unknown): data is TensorData {
  // The tag, not instanceof: works across realms and accepts Buffer for U8/BOOL.
  return ArrayBuffer.isView(data) && (data as unknown as { [Symbol.toStringTag]: string })[Symbol.toStringTag] === ARRAY_OF[dtype].name;
}

/**
 * A typed array view over bytes (a whole buffer, or a Uint8Array's window: its offset must be a multiple of
 * the element size, its length too). The bytes are taken as the host's byte order; swap them first on a
 * big-endian host (swapBytesInPlace).
 */
export function viewAs(dtype: DType, bytes: ArrayBuffer | Uint8Array): TensorData {
  const Ctor = ARRAY_OF[dtype];
  if (bytes instanceof ArrayBuffer) return new Ctor(bytes, 0, bytes.byteLength / Ctor.BYTES_PER_ELEMENT);
  return new Ctor(bytes.buffer, bytes.byteOffset, bytes.byteLength / Ctor.BYTES_PER_ELEMENT);
}

/** A zero-filled typed array of `length` elements of `dtype` (16-bit floats as raw bits). */
export function allocateAs(dtype: DType, length: number): TensorData {
  return new ARRAY_OF[dtype](length);
}

/** Element count of a shape; null if a dim is not a non-negative safe integer or the count overflows. */
export function elementCount(shape: unknown): number | null {
  if (!Array.isArray(shape)) return null;
  let n = 1;
  for (const d of shape) {
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) return null;
    n *= d;
  }
  // A zero dim makes the count 0 whatever the others are; otherwise it must stay exact.
  return Number.isSafeInteger(n) ? n : null;
}

/** The host's byte order, from how it stores a 16-bit 1 (no platform module needed). */
export const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Swap the bytes of each element in place (files are little-endian; only big-endian hosts need this). */
export function swapBytesInPlace(bytes: Uint8Array, elementSize: number): void {
  if (elementSize === 1) return;
  for (let i = 0; i + elementSize <= bytes.length; i += elementSize) {
    for (let a = i, b = i + elementSize - 1; a < b; a++, b--) {
      const t = bytes[a]!;
      bytes[a] = bytes[b]!;
      bytes[b] = t;
    }
  }
}
