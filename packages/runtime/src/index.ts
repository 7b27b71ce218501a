/**
 * @vlmkit/runtime: onnxruntime-node sessions with device choice (CUDA or
 * CPU), host tensors and their conversions, and a KV cache for decoder loops.
 */
export { createSession, VlmSession } from './session.js';
export type { ExternalDataBuffer, GraphOptimizationLevel, RunOptions, SessionOptions } from './session.js';
export type { Feed, ValueInfo } from './feeds.js';
export {
  CUDA_PROVIDER_FILES,
  chooseDevice,
  cudaInstallHint,
  findCudaBinaries,
  ortBindingDir,
  probeNvidiaGpu,
} from './device.js';
export type { CudaBinaries, Device, DeviceChoice, DeviceFacts, DeviceRequest, GpuProbe } from './device.js';
export { RuntimeError, nodeNameFromOrtMessage } from './errors.js';
export type { RuntimeErrorCode } from './errors.js';
export type { Logger } from './log.js';
export {
  HOST_DTYPES,
  bool,
  float32,
  fromOrt,
  hostTensor,
  int64,
  isHostTensor,
  isOrtTensor,
  numel,
  toOrt,
  zeros,
} from './tensor.js';
export type { HostDataTypes, HostDType, HostTensor, OrtTensor } from './tensor.js';
export { fromSafetensors, toSafetensors } from './safetensors-interop.js';
export { KvCache } from './kv-cache.js';
export type { KvCacheOptions, KvKind } from './kv-cache.js';
