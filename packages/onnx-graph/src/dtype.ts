import {
  allocateAs,
  DTYPE_OF,
  DTYPE_SIZE,
  ELEMENT_TYPE,
  type ElementType,
  f32ToBf16,
  f32ToF16,
  type TensorData,
} from '@vlmkit/safetensors';
import { GraphError } from './errors.js';
import { onnx } from './proto.js';

/** Element types a graph value or initializer can have: safetensors' dtypes, as ONNX spells them. */
export type DType = ElementType;

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

/** A dtype's data: safetensors' typed arrays. */
export type TypedArray = TensorData;

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

export function onnxDataType(dtype: DType): number {
  return ONNX_TYPE[dtype];
}

export function dtypeSize(dtype: DType): number {
  return DTYPE_SIZE[DTYPE_OF[dtype]];
}

export function isFloat(dtype: DType): boolean {
  return dtype === 'float32' || dtype === 'float16' || dtype === 'bfloat16' || dtype === 'float64';
}

/** Accepts both graph names (`float32`) and safetensors names (`F32`). */
export function normalizeDType(dtype: string): DType {
  if (Object.hasOwn(DTYPE_OF, dtype)) return dtype as DType;
  if (Object.hasOwn(ELEMENT_TYPE, dtype)) return ELEMENT_TYPE[dtype as keyof typeof ELEMENT_TYPE];
  throw new TypeError(`unknown dtype '${dtype}'`);
}

/** The typed array a dtype's data is held in (16-bit floats as raw bits). */
export function typedArrayFor(dtype: DType, length: number): TypedArray {
  return allocateAs(DTYPE_OF[dtype], length);
}

/** Numbers rounded (to nearest, ties to even) into a float dtype's storage: 16-bit floats as raw bits. */
export function floatData(dtype: 'float32' | 'float16' | 'bfloat16', values: ArrayLike<number>): Float32Array | Uint16Array {
  const f = Float32Array.from(values);
  return dtype === 'float32' ? f : dtype === 'float16' ? f32ToF16(f) : f32ToBf16(f);
}

/** `values` as the typed array of `dtype` holding `n` elements (16-bit floats rounded to nearest even, as raw bits). */
export function typedArrayOf(dtype: DType, n: number, values: readonly number[] | readonly bigint[] | TypedArray): TypedArray {
  if (values.length !== n) throw new GraphError('BAD_ARGUMENT', `constant has ${values.length} values, shape needs ${n}`);
  const out = typedArrayFor(dtype, n);
  if (out instanceof BigInt64Array) {
    for (let i = 0; i < n; i++) out[i] = BigInt(values[i] as number | bigint);
  } else if (dtype === 'float16' || dtype === 'bfloat16') {
    out.set(values instanceof Uint16Array ? values : floatData(dtype, values as ArrayLike<number>));
  } else {
    for (let i = 0; i < n; i++) (out as Float32Array)[i] = Number(values[i]);
  }
  return out;
}
