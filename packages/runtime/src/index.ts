/**
 * @vlmkit/runtime: onnxruntime-node sessions with device choice (CUDA or
 * CPU), host tensors and their conversions, and a KV cache for decoder loops.
 */

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
} from './device.js';
export {
  CUDA_EP_DLOPENED,
  CUDA_LIBRARY_ROLES,
  CUDA_PROVIDER_FILES,
  chooseDevice,
  cudaInstallHint,
  findCudaBinaries,
  findLibrary,
  missingCudaLibraries,
  ortBindingDir,
  probeNvidiaGpu,
  readElfDynamic,
  systemLibraryLookup,
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
  nodePlacement,
  offProvider,
  opTypeCounts,
  parseNodePlacements,
} from './placement.js';
export { fromSafetensors, toSafetensors } from './safetensors-interop.js';
export type { ExternalDataBuffer, GraphOptimizationLevel, RunOptions, SessionOptions } from './session.js';
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
