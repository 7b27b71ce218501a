// The browser's side of what differs between Node and the browser (package.json "imports": #platform),
// typed against platform.node.ts so the two cannot drift: onnxruntime-web, and what only Node can do
// (the CUDA EP's files, ORT's placement log) refused by name.
import * as ort from 'onnxruntime-web';
import { RuntimeError } from './errors.js';
import type * as NodePlatform from './platform.node.js';
import { webBackend } from './web-session.js';

export type OrtTensor = NodePlatform.OrtTensor;
export type OrtSession = NodePlatform.OrtSession;
export type OrtSessionOptions = NodePlatform.OrtSessionOptions;
export const Tensor: typeof NodePlatform.Tensor = ort.Tensor;

export const sessionBackend: typeof NodePlatform.sessionBackend = webBackend(ort);

export const logSetting: typeof NodePlatform.logSetting = () => {
  const v = (globalThis as { VLMKIT_LOG?: unknown }).VLMKIT_LOG;
  return typeof v === 'string' ? v : undefined;
};

function nodeOnly(what: string): never {
  throw new RuntimeError(
    'UNSUPPORTED_PLATFORM',
    `${what} needs Node (onnxruntime-node and the file system); in the browser sessions run on WebGPU or WASM (device 'auto', 'webgpu' or 'wasm').`,
  );
}

export const cudaInstallHint: typeof NodePlatform.cudaInstallHint = () => nodeOnly('cudaInstallHint');
export const findCudaBinaries: typeof NodePlatform.findCudaBinaries = () => nodeOnly('findCudaBinaries');
export const findLibrary: typeof NodePlatform.findLibrary = () => nodeOnly('findLibrary');
export const missingCudaLibraries: typeof NodePlatform.missingCudaLibraries = () => nodeOnly('missingCudaLibraries');
export const ortBindingDir: typeof NodePlatform.ortBindingDir = () => nodeOnly('ortBindingDir');
export const probeNvidiaGpu: typeof NodePlatform.probeNvidiaGpu = () => nodeOnly('probeNvidiaGpu');
export const readElfDynamic: typeof NodePlatform.readElfDynamic = () => nodeOnly('readElfDynamic');
export const systemLibraryLookup: typeof NodePlatform.systemLibraryLookup = () => nodeOnly('systemLibraryLookup');
export const nodePlacement: typeof NodePlatform.nodePlacement = async () => nodeOnly('nodePlacement');
