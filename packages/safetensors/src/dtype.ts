/**
 * Element types, their sizes, and the typed arrays that hold them.
 * F16 and BF16 are kept as raw bits in a Uint16Array (JS has no 16-bit float
 * array in Node 20); U8 and BOOL share Uint8Array.
 */
import { endianness } from 'node:os';

export type DType = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'BOOL';

export const DTYPE_SIZE: Record<DType, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
};

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
  /** Absolute path of the file that holds the tensor. */
  file: string;
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

type TypedArrayCtor = {
  new (buffer: ArrayBuffer, byteOffset?: number, length?: number): TensorData;
  readonly BYTES_PER_ELEMENT: number;
};

const ARRAY_OF: Record<DType, TypedArrayCtor> = {
  F64: Float64Array,
  F32: Float32Array,
  F16: Uint16Array,
  BF16: Uint16Array,
  I64: BigInt64Array,
  I32: Int32Array,
  I16: Int16Array,
  I8: Int8Array,
  U8: Uint8Array,
  BOOL: Uint8Array,
};

/** The typed array class that holds `dtype` (e.g. 'Uint16Array' for BF16). */
export function arrayNameOf(dtype: DType): string {
  return ARRAY_OF[dtype].name;
}

/** True when `data` is the typed array class that holds `dtype`. */
export function dataMatches(dtype: DType, data: unknown): data is TensorData {
  // The tag, not instanceof: works across realms and accepts Buffer for U8/BOOL.
  return ArrayBuffer.isView(data) && (data as unknown as { [Symbol.toStringTag]: string })[Symbol.toStringTag] === ARRAY_OF[dtype].name;
}

/** A typed array view over a whole buffer (whose length is a multiple of the element size). */
export function viewAs(dtype: DType, buffer: ArrayBuffer): TensorData {
  const Ctor = ARRAY_OF[dtype];
  return new Ctor(buffer, 0, buffer.byteLength / Ctor.BYTES_PER_ELEMENT);
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

export const HOST_IS_LITTLE_ENDIAN = endianness() === 'LE';

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
