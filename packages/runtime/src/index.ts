/**
 * @vlmkit/runtime: ONNX Runtime sessions with device choice (Node: onnxruntime-node on CUDA or CPU;
 * browser: onnxruntime-web on WebGPU or WASM), host tensors and their conversions, and a KV cache for
 * decoder loops.
 */

// Node only (the browser's versions throw RuntimeError UNSUPPORTED_PLATFORM).
export {
  cudaInstallHint,
  findCudaBinaries,
  findLibrary,
  missingCudaLibraries,
  nodePlacement,
  ortBindingDir,
  probeNvidiaGpu,
  readElfDynamic,
  systemLibraryLookup,
} from '#platform';
export type {
  CudaBinaries,
  Device,
  DeviceChoice,
  DeviceFacts,
  DeviceRequest,
  ElfDynamic,
  GpuProbe,
  LibraryLookup,
  MissingLibrary,
  NodeDevice,
  WebDevice,
} from './device.js';
export {
  CUDA_EP_DLOPENED,
  CUDA_LIBRARY_ROLES,
  CUDA_PROVIDER_FILES,
  chooseDevice,
  NODE_DEVICE_REQUESTS,
  WEB_DEVICE_REQUESTS,
} from './device.js';
export type { RuntimeErrorCode } from './errors.js';
export { nodeNameFromOrtMessage, RuntimeError } from './errors.js';
export type { Feed, ValueInfo } from './feeds.js';
export type { KvCacheDType, KvCacheNames, KvCacheOptions, KvKind } from './kv-cache.js';
export { KvCache } from './kv-cache.js';
export type { Logger } from './log.js';
export type { NodePlacement, PlacedNode, PlacementOptions, ProviderNodes } from './placement.js';
export {
  EXECUTION_PROVIDERS,
  formatOffProvider,
  formatPlacement,
  offProvider,
  opTypeCounts,
  parseNodePlacements,
} from './placement.js';
export { fromSafetensors, toSafetensors } from './safetensors-interop.js';
export type { ExternalDataBuffer, GraphOptimizationLevel, InMemoryModel, ModelSource, RunOptions, SessionOptions } from './session.js';
export { createSession, VlmSession } from './session.js';
export type { HostDataTypes, HostDType, HostTensor, OrtTensor } from './tensor.js';
export {
  bool,
  float32,
  fromOrt,
  HOST_DTYPES,
  hostTensor,
  int64,
  isHostTensor,
  isOrtTensor,
  numel,
  toOrt,
  zeros,
} from './tensor.js';
export { type GpuLike, probeWebGpu, type WebGpuProbe } from './web-session.js';
