export { createSha256, loadModelProto, observeFileReads, saveModel } from '#platform';
export {
  type Binding,
  type Contract,
  type ContractDims,
  type ContractEntry,
  ContractError,
  type ContractErrorCode,
  type ContractNames,
  type ContractProblem,
  checkTensors,
  contract,
  contractProblems,
  type DeclaredInputs,
  type DTypeVar,
  declaredTensors,
  declareInputs,
  declareTensors,
  dtypeVar,
  type EntryOptions,
  type EntryValue,
  type Feeds,
  type FeedValues,
  feeds,
  required,
  type Schema,
  type TensorLike,
  type TensorName,
  type TensorSpec,
  tensorSpecs,
} from './contract.js';
export {
  COMPUTE_DTYPES,
  type ComputeDType,
  computeDType,
  type DType,
  dtypeSize,
  floatData,
  isFloat,
  normalizeDType,
  type TypedArray,
  typedArrayFor,
} from './dtype.js';
export { emulateInFloat32 } from './emulate.js';
export { GraphError, type GraphErrorCode } from './errors.js';
export { interleavedGateUp, stackedExperts } from './expert-weights.js';
export { Graph } from './graph.js';
export type { Attr, GraphOptions, InitializerEntry, OutputSpec } from './graph-core.js';
export { MS_DOMAIN } from './graph-core.js';
export {
  type ExternalBuffer,
  modelBytes,
  relocateExternalData,
  type SavedModel,
  type SaveOptions,
  type SerializedModel,
  type SerializeOptions,
  serializeModel,
} from './model.js';
export * as nn from './nn.js';
export { everyNode } from './nodes.js';
export type { AttentionOptions, AttentionResult } from './ops-attention.js';
export { type GqaInputs, OP_SETS, type OpSet, opSet } from './ops-contrib.js';
export type { LoopBodyInputs, LoopBodyOutputs, LoopCarried, LoopOutputs } from './ops-control.js';
export type { Operand } from './ops-math.js';
export { recordComponentParameters, recordParameters } from './parameters.js';
export { appendAttentionPass } from './passes/append-attention.js';
export {
  CONTRIB_ATTENTION_KERNELS,
  type ContribAttentionKernel,
  type ContribAttentionOptions,
  contribAttentionPass,
} from './passes/contrib-attention.js';
export { expertGateUpPass } from './passes/expert-gate-up.js';
export { EXPERTS_PER_IF, expertGroupsPass } from './passes/expert-groups.js';
export { applyComputeDtype, COMPUTE_DTYPE_IO, computeDtypePasses, computeIoDType, floatConvertPass } from './passes/float-convert.js';
export {
  APPEND_ATTENTION_PASSES,
  CONTRIB_PASSES,
  PASS_NAMES,
  PASSES,
  type PassName,
  resolvePasses,
  WEBGPU_PASSES,
} from './passes/index.js';
export {
  markRoutedExperts,
  moeExpertsPass,
  qmoeExpertsPass,
  ROUTED_EXPERTS,
  type RoutedExperts,
  WIDE_MOE_EXPERTS,
  wideMoeExpertsPass,
} from './passes/moe-experts.js';
export { nonEmptyScatterPass } from './passes/non-empty-scatter.js';
export { markFrameBias, oneFrameAttentionPass } from './passes/one-frame-attention.js';
export { quantizeLinearPass } from './passes/quantize-linear.js';
export {
  applyPasses,
  attrNumber,
  deferPasses,
  deferredPassKey,
  type GraphPass,
  makeNode,
  NodeIndex,
  type PassBody,
  replaceNodes,
  rewriteEach,
  runDeferredPasses,
} from './passes/rewrite.js';
export { skipLayerNormPass, skipRmsNormPass } from './passes/skip-norm.js';
export { storedLayoutCastPass, storedLayoutPass } from './passes/stored-layout.js';
export { webgpuAttentionPass } from './passes/webgpu-attention.js';
export { webgpuGeluPass } from './passes/webgpu-gelu.js';
export { WEBGPU_OPSET, webgpuOpsetPass } from './passes/webgpu-opset.js';
export { onnx } from './proto.js';
export {
  QUANTIZE_MODES,
  type QuantizedBlocks,
  type QuantizeMode,
  type QuantizeOptions,
  type QuantizeRequest,
  quantizeBlockwise,
  quantizedShapes,
  quantizeOptions,
} from './quant.js';
export { floatValues, type QuantizedRefs, quantizedRefs } from './quant-ref.js';
export { type FileRead, reportFileRead } from './read-observer.js';
export type { Sha256 } from './sha256.js';
export { broadcastShapes, type Dim, dimProduct, formatShape, isStatic, type Shape } from './shape.js';
export { tensorBytes } from './tensor-bytes.js';
export {
  lazyTensor,
  type RangeSource,
  type TensorRef,
  tensorByteLength,
  tensorFromArray,
  tensorFromFile,
  tensorFromSafetensors,
  tensorFromSource,
} from './tensor-ref.js';
export { Value } from './value.js';
export { editDistance, nearestNames, type ParameterSpec, Weights } from './weights.js';
