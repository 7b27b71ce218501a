export { Graph } from './graph.js';
export type { Attr, GraphOptions, InitializerEntry } from './graph-core.js';
export { MS_DOMAIN } from './graph-core.js';
export type { AttentionOptions, AttentionResult } from './ops-attention.js';
export type { Operand } from './ops-math.js';
export { Value } from './value.js';
export { type DType, type TypedArray, dtypeSize, isFloat, normalizeDType, typedArrayFor } from './dtype.js';
export { type Dim, type Shape, broadcastShapes, dimProduct, formatShape, isStatic } from './shape.js';
export { GraphError, type GraphErrorCode } from './errors.js';
export { type TensorRef, lazyTensor, tensorByteLength, tensorFromArray, tensorFromFile, tensorFromSafetensors } from './tensor-ref.js';
export { Weights, editDistance, nearestNames } from './weights.js';
export {
  type ExternalBuffer,
  type SaveOptions,
  type SavedModel,
  type SerializeOptions,
  type SerializedModel,
  loadModelProto,
  modelBytes,
  saveModel,
  serializeModel,
  tensorBytes,
} from './model.js';
export * as nn from './nn.js';
export { onnx } from './proto.js';
