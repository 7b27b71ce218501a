import { type DType, dtypeSize, normalizeDType, type TypedArray } from './dtype.js';
import { GraphError } from './errors.js';

/**
 * A tensor the graph can embed as an initializer, without holding its bytes
 * until the model is serialised:
 * - `data`: bytes in memory (small constants, tests);
 * - `file`: a byte range of a file on disk (a safetensors tensor used
 *   unchanged: external data can point straight at it, so it is never copied);
 * - `source`: a byte range of a file read through a `RangeSource` (a picked
 *   `Blob`, an HTTP URL read with range requests: anything without a path),
 *   read when the model is serialised;
 * - `lazy`: produced on demand (a transform of checkpoint tensors: fusion,
 *   stacking, transpose, cast), loaded once at save time and written to the
 *   external-data file.
 */
export type TensorRef = {
  readonly dtype: DType;
  readonly shape: readonly number[];
} & (
  | { readonly kind: 'data'; readonly data: TypedArray }
  | { readonly kind: 'file'; readonly path: string; readonly byteOffset: number; readonly byteLength: number }
  | { readonly kind: 'source'; readonly source: RangeSource; readonly byteOffset: number; readonly byteLength: number }
  | { readonly kind: 'lazy'; readonly load: () => Promise<TypedArray> }
);

/**
 * Random access to one file's bytes: the part of `@vlmkit/safetensors`' `ByteSource` a tensor needs (any
 * `ByteSource` is one). `name` and `stamp` name the file and its version in progress reports and cache keys.
 */
export interface RangeSource {
  readonly name: string;
  readonly stamp: string;
  /** Exactly `length` bytes at `offset` (a fresh buffer). */
  read(offset: number, length: number): Promise<Uint8Array>;
}

export function tensorByteLength(ref: Pick<TensorRef, 'dtype' | 'shape'>): number {
  return ref.shape.reduce((a, b) => a * b, 1) * dtypeSize(ref.dtype);
}

function checkLength(dtype: DType, shape: readonly number[], length: number): void {
  const n = shape.reduce((a, b) => a * b, 1);
  if (n !== length) {
    throw new GraphError('PARAMETER_SHAPE', `tensor data has ${length} elements but shape [${shape.join(', ')}] (${dtype}) needs ${n}`);
  }
}

/** A tensor from a typed array (16-bit floats as raw Uint16 bits). */
export function tensorFromArray(dtype: DType | string, shape: readonly number[], data: TypedArray): TensorRef {
  const dt = normalizeDType(dtype);
  checkLength(dt, shape, data.length);
  return { kind: 'data', dtype: dt, shape: [...shape], data };
}

/** A tensor stored as a byte range of a file (e.g. a safetensors tensor's data). */
export function tensorFromFile(
  dtype: DType | string,
  shape: readonly number[],
  path: string,
  byteOffset: number,
  byteLength: number,
): TensorRef {
  const dt = normalizeDType(dtype);
  const expected = tensorByteLength({ dtype: dt, shape });
  if (expected !== byteLength) {
    throw new GraphError('PARAMETER_SHAPE', `${path}@${byteOffset}: ${byteLength} bytes but [${shape.join(', ')}] ${dt} needs ${expected}`);
  }
  return { kind: 'file', dtype: dt, shape: [...shape], path, byteOffset, byteLength };
}

/** A tensor stored as a byte range of a `RangeSource` (a Blob, a URL: a file without a path). */
export function tensorFromSource(
  dtype: DType | string,
  shape: readonly number[],
  source: RangeSource,
  byteOffset: number,
  byteLength: number,
): TensorRef {
  const dt = normalizeDType(dtype);
  const expected = tensorByteLength({ dtype: dt, shape });
  if (expected !== byteLength) {
    throw new GraphError(
      'PARAMETER_SHAPE',
      `${source.name}@${byteOffset}: ${byteLength} bytes but [${shape.join(', ')}] ${dt} needs ${expected}`,
    );
  }
  return { kind: 'source', dtype: dt, shape: [...shape], source, byteOffset, byteLength };
}

/**
 * A safetensors tensor described by its header entry (the shape of
 * `@vlmkit/safetensors`' `TensorInfo`), referenced in place: through `source`
 * when the entry has one (a file without a path), else the `file` path.
 */
export function tensorFromSafetensors(info: {
  dtype: string;
  shape: readonly number[];
  file: string;
  byteOffset: number;
  byteLength: number;
  source?: RangeSource | undefined;
}): TensorRef {
  if (info.source !== undefined) return tensorFromSource(info.dtype, info.shape, info.source, info.byteOffset, info.byteLength);
  return tensorFromFile(info.dtype, info.shape, info.file, info.byteOffset, info.byteLength);
}

/** A tensor computed when the model is serialised. */
export function lazyTensor(dtype: DType | string, shape: readonly number[], load: () => Promise<TypedArray>): TensorRef {
  const dt = normalizeDType(dtype);
  return {
    kind: 'lazy',
    dtype: dt,
    shape: [...shape],
    load: async () => {
      const data = await load();
      checkLength(dt, shape, data.length);
      return data;
    },
  };
}
