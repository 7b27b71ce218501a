import type { OpSet } from '@vlmkit/onnx-graph';
import { chooseDevice, type Device, type DeviceRequest, findCudaBinaries, probeNvidiaGpu } from '@vlmkit/runtime';

/**
 * Which ops the decoders are built with when `ops` is not given, per device (onnx-graph's `OpSet`):
 * - cpu: 'onnx'. Measured (tools/bench/ops-ab.mjs, medium ERNIE, 2 shared cores; packages/models/README.md
 *   "Op set"): 'contrib' prefills faster (0.74x) but decodes slower (1.53x per token), and decode dominates.
 * - cuda: 'contrib'. A stated choice pending the GPU run (tools/gpu/README.md): the CUDA EP takes every
 *   contrib op the float32 graphs use (MultiHeadAttention, SkipSimplifiedLayerNormalization, RotaryEmbedding),
 *   and its fused attention kernels are what the fp16/bf16 graphs need.
 */
export const DEFAULT_OPS: Readonly<Record<Device, OpSet>> = { cpu: 'onnx', cuda: 'contrib' };

/**
 * `ops` when given, else the default of the device `device` would plan for (runtime's `chooseDevice`; an
 * 'auto' whose CUDA session then fails to start runs the 'contrib' graphs on CPU, which is correct, only
 * not the CPU default).
 */
export function resolveOps(ops: OpSet | undefined, device: DeviceRequest | undefined): OpSet {
  if (ops !== undefined) return ops;
  if (device === 'cpu') return DEFAULT_OPS.cpu;
  return DEFAULT_OPS[chooseDevice(device ?? 'auto', { binaries: findCudaBinaries(), gpu: probeNvidiaGpu }).device];
}
