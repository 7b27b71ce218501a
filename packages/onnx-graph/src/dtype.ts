import { f32ToBf16, f32ToF16 } from '@vlmkit/safetensors';
import { onnx } from './proto.js';

/** Element types a graph value or initializer can have. */
export type DType = 'float32' | 'float16' | 'bfloat16' | 'float64' | 'int64' | 'int32' | 'int16' | 'int8' | 'uint8' | 'bool';

/**
 * The float type a graph computes in (`GraphOptions.computeDtype`): weights and activations are held in it,
 * while norms, routers and rotary tables compute in float32 inside and logits leave as float32.
 */
export type ComputeDType = 'float32' | 'float16' | 'bfloat16';

/** The compute dtypes, in the order the CLI and docs list them. */
export const COMPUTE_DTYPES: readonly ComputeDType[] = ['float32', 'float16', 'bfloat16'];

/** Narrows a string to a ComputeDType; anything else is a TypeError listing the choices. */
export function computeDType(s: string): ComputeDType {
  if ((COMPUTE_DTYPES as readonly string[]).includes(s)) return s as ComputeDType;
  throw new TypeError(`unknown compute dtype '${s}' (one of ${COMPUTE_DTYPES.join(', ')})`);
}

export type TypedArray = Float32Array | Float64Array | Uint16Array | BigInt64Array | Int32Array | Int16Array | Int8Array | Uint8Array;

const ONNX_TYPE: Record<DType, number> = {
  float32: onnx.TensorProto.DataType.FLOAT,
  float16: onnx.TensorProto.DataType.FLOAT16,
  bfloat16: onnx.TensorProto.DataType.BFLOAT16,
  float64: onnx.TensorProto.DataType.DOUBLE,
  int64: onnx.TensorProto.DataType.INT64,
  int32: onnx.TensorProto.DataType.INT32,
  int16: onnx.TensorProto.DataType.INT16,
  int8: onnx.TensorProto.DataType.INT8,
  uint8: onnx.TensorProto.DataType.UINT8,
  bool: onnx.TensorProto.DataType.BOOL,
};

const SIZE: Record<DType, number> = {
  float32: 4,
  float16: 2,
  bfloat16: 2,
  float64: 8,
  int64: 8,
  int32: 4,
  int16: 2,
  int8: 1,
  uint8: 1,
  bool: 1,
};

/** safetensors dtype names, so checkpoint tensors can be embedded without a lookup table elsewhere. */
const FROM_SAFETENSORS: Record<string, DType> = {
  F32: 'float32',
  F16: 'float16',
  BF16: 'bfloat16',
  F64: 'float64',
  I64: 'int64',
  I32: 'int32',
  I16: 'int16',
  I8: 'int8',
  U8: 'uint8',
  BOOL: 'bool',
};

export function onnxDataType(dtype: DType): number {
  return ONNX_TYPE[dtype];
}

export function dtypeSize(dtype: DType): number {
  return SIZE[dtype];
}

export function isFloat(dtype: DType): boolean {
  return dtype === 'float32' || dtype === 'float16' || dtype === 'bfloat16' || dtype === 'float64';
}

/** Accepts both graph names (`float32`) and safetensors names (`F32`). */
export function normalizeDType(dtype: string): DType {
  if (dtype in SIZE) return dtype as DType;
  const mapped = FROM_SAFETENSORS[dtype];
  if (mapped === undefined) throw new TypeError(`unknown dtype '${dtype}'`);
  return mapped;
}

/** The typed array a dtype's data is held in (16-bit floats as raw bits). */
export function typedArrayFor(dtype: DType, length: number): TypedArray {
  switch (dtype) {
    case 'float32':
      return new Float32Array(length);
    case 'float64':
      return new Float64Array(length);
    case 'float16':
    case 'bfloat16':
      return new Uint16Array(length);
    case 'int64':
      return new BigInt64Array(length);
    case 'int32':
      return new Int32Array(length);
    case 'int16':
      return new Int16Array(length);
    case 'int8':
      return new Int8Array(length);
    case 'uint8':
    case 'bool':
      return new Uint8Array(length);
  }
}

/** Numbers rounded (to nearest, ties to even) into a float dtype's storage: 16-bit floats as raw bits. */
export function floatData(dtype: 'float32' | 'float16' | 'bfloat16', values: ArrayLike<number>): Float32Array | Uint16Array {
  const f = Float32Array.from(values);
  return dtype === 'float32' ? f : dtype === 'float16' ? f32ToF16(f) : f32ToBf16(f);
}
