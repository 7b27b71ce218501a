/**
 * Execution-provider choice. onnxruntime-node 1.29 ships the CPU (and WebGPU)
 * EP in its npm package; the CUDA EP is two extra shared libraries that must
 * sit next to its native binding (`bin/napi-v6/<platform>/<arch>/`), where ORT
 * looks for them when a session asks for 'cuda'. pnpm 10 skips the package's
 * install script that would fetch them, so they are usually absent.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export type Device = 'cpu' | 'cuda';
export type DeviceRequest = 'auto' | Device;

/** The libraries ORT loads for the CUDA EP: the shared provider bridge first, then the EP. */
export const CUDA_PROVIDER_FILES: readonly string[] = ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'];

/** Where onnxruntime-node keeps its native binding and looks for provider libraries. */
export function ortBindingDir(): string {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('onnxruntime-node'); // .../onnxruntime-node/dist/index.js
  return join(dirname(entry), '..', 'bin', 'napi-v6', process.platform, process.arch);
}

export interface CudaBinaries {
  dir: string;
  present: boolean;
  missing: string[];
}

export function findCudaBinaries(dir: string = ortBindingDir()): CudaBinaries {
  const missing = CUDA_PROVIDER_FILES.filter((f) => !existsSync(join(dir, f)));
  return { dir, present: missing.length === 0, missing };
}

export interface GpuProbe {
  found: boolean;
  /** What was looked at and what it said, for the device reason. */
  evidence: string;
}

/** Is there an NVIDIA GPU that answers? Cheap checks first, nvidia-smi last. */
export function probeNvidiaGpu(): GpuProbe {
  const procDir = '/proc/driver/nvidia/gpus';
  try {
    const gpus = readdirSync(procDir);
    if (gpus.length > 0) return { found: true, evidence: `${procDir} lists ${gpus.length} GPU(s)` };
  } catch {
    // no NVIDIA kernel driver (or not Linux); try the tool
  }
  try {
    const out = execFileSync('nvidia-smi', ['-L'], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] });
    const n = out.split('\n').filter((l) => l.startsWith('GPU ')).length;
    if (n > 0) return { found: true, evidence: `nvidia-smi -L lists ${n} GPU(s)` };
    return { found: false, evidence: 'nvidia-smi -L lists no GPU' };
  } catch {
    return { found: false, evidence: `no ${procDir} and no working nvidia-smi` };
  }
}

/** The sentence a user needs to get the CUDA EP libraries in place. */
export function cudaInstallHint(dir: string): string {
  const pkgDir = join(dir, '..', '..', '..', '..'); // <pkg>/bin/napi-v6/<platform>/<arch>
  const files = CUDA_PROVIDER_FILES.join(' and ');
  return [
    `To enable CUDA, put ${files} built for onnxruntime 1.29.0 into ${dir}. Either:`,
    `(1) CUDA 12: run onnxruntime-node's own installer with the CUDA flag:` +
      ` \`node ${join(pkgDir, 'script', 'install.js')} --onnxruntime-node-install=cuda12\`` +
      ` (npm users: \`npm install onnxruntime-node@1.29.0 --onnxruntime-node-install=cuda12\`;` +
      ` pnpm 10 skips install scripts unless onnxruntime-node is in "onlyBuiltDependencies");`,
    `(2) CUDA 13: \`npm pack com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9\`, unpack it and copy its ${files} into that directory.`,
    'Either way the matching CUDA runtime and cuDNN libraries must be on the loader path (LD_LIBRARY_PATH).',
  ].join(' ');
}

export interface DeviceChoice {
  device: Device;
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
  const { binaries } = facts;
  if (!binaries.present) {
    const why = `CUDA EP binaries not found in ${binaries.dir} (missing ${binaries.missing.join(', ')})`;
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
