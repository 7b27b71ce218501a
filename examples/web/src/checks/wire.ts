/**
 * Tensors across the page boundary: `page.evaluate` returns JSON, so the harness sends each tensor as its
 * dtype, dims and little-endian bytes in base64; the runner decodes them back into the same typed array.
 */

export type WireDType = 'float32' | 'int64' | 'int32' | 'uint8';

export interface WireTensor {
  dtype: WireDType;
  dims: number[];
  base64: string;
}

export type NumericArray = Float32Array | BigInt64Array | Int32Array | Uint8Array;

const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array } as const;

function dtypeOf(data: NumericArray): WireDType {
  if (data instanceof Float32Array) return 'float32';
  if (data instanceof BigInt64Array) return 'int64';
  if (data instanceof Int32Array) return 'int32';
  return 'uint8';
}

export function toWire(data: NumericArray, dims: readonly number[]): WireTensor {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let binary = '';
  // Chunks keep String.fromCharCode's argument count far below engines' limits.
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return { dtype: dtypeOf(data), dims: [...dims], base64: btoa(binary) };
}

export function fromWire(t: WireTensor): { dims: number[]; data: NumericArray } {
  const binary = atob(t.base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  const View = ARRAYS[t.dtype];
  return { dims: t.dims, data: new View(bytes.buffer, 0, bytes.byteLength / View.BYTES_PER_ELEMENT) };
}
