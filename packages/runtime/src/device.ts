/**
 * Execution-provider choice (the Node rule; the browser's is web-device.ts). onnxruntime-node 1.29 ships the CPU (and WebGPU)
 * EP in its npm package; the CUDA EP is two extra shared libraries that must
 * sit next to its native binding (`bin/napi-v6/<platform>/<arch>/`), where ORT
 * looks for them when a session asks for 'cuda'. pnpm 10 skips the package's
 * install script that would fetch them, so they are usually absent.
 */
/** Where a session runs: Node's CPU and CUDA EPs, onnxruntime-web's WASM (CPU) and WebGPU backends. */
export type Device = NodeDevice | WebDevice;
export type NodeDevice = 'cpu' | 'cuda';
export type WebDevice = 'wasm' | 'webgpu';
/**
 * 'auto' picks the fastest device present (Node: CUDA, else CPU; browser: WebGPU, else WASM). 'cpu' is the
 * CPU on either platform (WASM in the browser); 'cuda' is Node's, 'wasm' and 'webgpu' the browser's.
 */
export type DeviceRequest = 'auto' | Device;

/** The requests each platform takes. */
export const NODE_DEVICE_REQUESTS: readonly DeviceRequest[] = ['auto', 'cpu', 'cuda'];
export const WEB_DEVICE_REQUESTS: readonly DeviceRequest[] = ['auto', 'cpu', 'wasm', 'webgpu'];

/** The libraries ORT loads for the CUDA EP: the shared provider bridge first, then the EP. */
export const CUDA_PROVIDER_FILES: readonly string[] = ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'];

export interface CudaBinaries {
  dir: string;
  present: boolean;
  missing: string[];
  /**
   * When the EP files are present: the libraries they need that the loader
   * would not find (empty when all are found; absent when not checked).
   */
  missingLibraries?: MissingLibrary[];
}

export interface MissingLibrary {
  /** The soname, e.g. 'libcublas.so.13'. */
  name: string;
  /** What it is, e.g. 'cuBLAS' (see CUDA_LIBRARY_ROLES). */
  role: string;
  /** The EP file that needs it. */
  neededBy: string;
}

/** What each library the CUDA EP loads is, for messages that say what to install. */
export const CUDA_LIBRARY_ROLES: Readonly<Record<string, string>> = {
  'libcudart.so': 'the CUDA runtime',
  'libcublas.so': 'cuBLAS',
  'libcublasLt.so': 'cuBLASLt (cuBLAS)',
  'libcurand.so': 'cuRAND',
  'libcufft.so': 'cuFFT',
  'libcudnn.so': 'cuDNN',
  'libcuda.so': 'the NVIDIA driver',
  'libnvrtc.so': 'NVRTC',
};

/**
 * Libraries the CUDA EP opens with dlopen when it starts rather than listing
 * them in its dynamic section, so an ELF reader does not see them: cuDNN
 * (the CUDA stream's cudnnCreate runs for every session).
 */
export const CUDA_EP_DLOPENED: readonly string[] = ['libcudnn.so.9'];

/** Where the dynamic loader looks: LD_LIBRARY_PATH, ldconfig's cache, the default directories. */
export interface LibraryLookup {
  ldLibraryPath: readonly string[];
  /** The sonames in ldconfig's cache (`ldconfig -p`). */
  cache: ReadonlySet<string>;
  defaultDirs: readonly string[];
}

export interface ElfDynamic {
  /** DT_NEEDED: the sonames the loader must find, in order. */
  needed: string[];
  /** DT_RUNPATH (or the older DT_RPATH) directories. */
  runpath: string[];
}

export interface GpuProbe {
  found: boolean;
  /** What was looked at and what it said, for the device reason. */
  evidence: string;
}

export interface DeviceChoice {
  device: NodeDevice;
  reason: string;
}

export interface DeviceFacts {
  binaries: CudaBinaries;
  /** Only consulted when the binaries are present. */
  gpu: () => GpuProbe;
}

/**
 * Decide the device from what is installed and what answers. Returns
 * `{ device: 'cuda' }` only as a plan: the caller still tries to create the
 * session on CUDA, and for 'auto' falls back to CPU if ORT refuses.
 * For an explicit 'cuda' that cannot work, returns `unavailable` with why.
 */
export function chooseDevice(request: DeviceRequest, facts: DeviceFacts): DeviceChoice & { unavailable?: string } {
  if (request === 'cpu') return { device: 'cpu', reason: 'cpu requested' };
  if (request === 'wasm' || request === 'webgpu') {
    const why = `'${request}' is a browser device (onnxruntime-web); in Node use 'cpu' or 'cuda'`;
    return { device: 'cpu', reason: why, unavailable: why };
  }
  const { binaries } = facts;
  if (!binaries.present) {
    const why = `CUDA EP binaries not found in ${binaries.dir} (missing ${binaries.missing.join(', ')})`;
    if (request === 'cuda') return { device: 'cpu', reason: why, unavailable: why };
    return { device: 'cpu', reason: `auto: ${why}` };
  }
  const libs = binaries.missingLibraries ?? [];
  if (libs.length > 0) {
    const list = libs.map((l) => `${l.name} (${l.role}, needed by ${l.neededBy})`).join(', ');
    const why = `CUDA EP binaries in ${binaries.dir} but the loader finds no ${list} on LD_LIBRARY_PATH or in ldconfig's cache`;
    if (request === 'cuda') return { device: 'cpu', reason: why, unavailable: why };
    return { device: 'cpu', reason: `auto: ${why}` };
  }
  const gpu = facts.gpu();
  if (!gpu.found) {
    const why = `CUDA EP binaries present but no GPU answered (${gpu.evidence})`;
    if (request === 'cuda') return { device: 'cpu', reason: why, unavailable: why };
    return { device: 'cpu', reason: `auto: ${why}` };
  }
  const why = `CUDA EP binaries in ${binaries.dir}, ${gpu.evidence}`;
  return { device: 'cuda', reason: request === 'auto' ? `auto: ${why}` : `cuda requested; ${why}` };
}

/** Heuristic: does an ORT session-creation error come from the CUDA EP rather than the model? */
export function isCudaProviderFailure(message: string): boolean {
  return /AppendExecutionProvider_Cuda|providers_(cuda|shared)|libcud|libcublas|CUDA|cuDNN/i.test(message);
}
