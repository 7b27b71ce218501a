/**
 * The vocabulary of the graph builder (`Graph`, graph.ts) shared with the op files, the serializer and the
 * rewrite passes: node attributes, options, output specs, initializer entries.
 */
import type { ComputeDType, DType, TypedArray } from './dtype.js';
import type { OnnxTypes } from './proto.js';
import { onnx } from './proto.js';
import type { Shape } from './shape.js';
import type { TensorRef } from './tensor-ref.js';

/** A node attribute with its ONNX kind made explicit (JS numbers do not say int or float). */
export type Attr =
  | { readonly int: number }
  | { readonly float: number }
  | { readonly string: string }
  | { readonly ints: readonly number[] }
  | { readonly floats: readonly number[] }
  | { readonly tensor: { dtype: DType; shape: readonly number[]; data: TypedArray } }
  /** A subgraph (Loop / If bodies): see `g.loop`, `g.if`. */
  | { readonly graph: OnnxTypes.IGraphProto };

/** An optional attribute: absent, so the op's default applies, when the option is not given. */
export function flagAttr(on: boolean | undefined): Attr | undefined {
  return on ? { int: 1 } : undefined;
}

/** See `flagAttr`. */
export function intAttr(value: number | undefined): Attr | undefined {
  return value === undefined ? undefined : { int: value };
}

/** See `flagAttr`. */
export function floatAttr(value: number | undefined): Attr | undefined {
  return value === undefined ? undefined : { float: value };
}

export const MS_DOMAIN = 'com.microsoft';

export interface GraphOptions {
  /** Graph name written into the model. */
  name?: string;
  /** ai.onnx opset (default 23: Attention, RMSNormalization, RotaryEmbedding). */
  opset?: number;
  /**
   * The float type the graph is written in (default 'float32'). Builders write float32 and a 16-bit graph is
   * made from it by `floatConvertPass`, which sets `Graph.computeDtype`; this option is for graphs written
   * directly in a 16-bit type (kernel probes, op tests).
   */
  computeDtype?: ComputeDType | undefined;
}

export interface OutputSpec {
  dtype: DType;
  shape: Shape;
}

export interface InitializerEntry {
  readonly name: string;
  readonly ref: TensorRef;
}

export function toAttribute(name: string, a: Attr): OnnxTypes.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if ('int' in a) return { name, type: T.INT, i: a.int };
  if ('float' in a) return { name, type: T.FLOAT, f: a.float };
  if ('string' in a) return { name, type: T.STRING, s: new TextEncoder().encode(a.string) };
  if ('ints' in a) return { name, type: T.INTS, ints: [...a.ints] };
  if ('floats' in a) return { name, type: T.FLOATS, floats: [...a.floats] };
  if ('graph' in a) return { name, type: T.GRAPH, g: a.graph };
  const t = a.tensor;
  return {
    name,
    type: T.TENSOR,
    t: {
      dataType: onnx.TensorProto.DataType[dtypeKey(t.dtype)],
      dims: [...t.shape],
      rawData: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
    },
  };
}

function dtypeKey(dtype: DType): keyof typeof onnx.TensorProto.DataType {
  const map: Record<DType, keyof typeof onnx.TensorProto.DataType> = {
    float32: 'FLOAT',
    float16: 'FLOAT16',
    bfloat16: 'BFLOAT16',
    float64: 'DOUBLE',
    int64: 'INT64',
    int32: 'INT32',
    int16: 'INT16',
    int8: 'INT8',
    uint8: 'UINT8',
    bool: 'BOOL',
  };
  return map[dtype];
}
