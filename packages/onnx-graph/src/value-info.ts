import { onnxDataType } from './dtype.js';
import type { OnnxTypes } from './proto.js';
import type { Shape } from './shape.js';
import type { Value } from './value.js';

const PLAIN_DIM = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A graph input or output as ONNX declares it: name, element type, shape. */
export function valueInfo(v: Value): OnnxTypes.IValueInfoProto {
  return {
    name: v.name,
    type: { tensorType: { elemType: onnxDataType(v.dtype), shape: { dim: shapeProto(v.shape) } } },
  };
}

/** Known dims as values, plain symbolic names as params; derived expressions left unnamed for ORT to infer. */
export function shapeProto(shape: Shape): OnnxTypes.TensorShapeProto.IDimension[] {
  return shape.map((d) => (typeof d === 'number' ? { dimValue: d } : PLAIN_DIM.test(d) ? { dimParam: d } : {}));
}
