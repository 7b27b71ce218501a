// Node's side of what differs between Node and the browser (package.json "imports": #platform):
// onnxruntime-node, the CUDA EP's files and GPU probes, ORT's placement log from a child process. The
// browser's side is platform.browser.ts, typed against this file.
import ort from 'onnxruntime-node';
import { nodeBackend } from './session.node.js';

export type OrtTensor = ort.Tensor;
export type OrtSession = ort.InferenceSession;
export type OrtSessionOptions = ort.InferenceSession.SessionOptions;
/** ORT's Tensor class. */
export const Tensor = ort.Tensor;

/** How sessions are made here: onnxruntime-node, CUDA or CPU. */
export const sessionBackend = nodeBackend();

/** VLMKIT_LOG. */
export function logSetting(): string | undefined {
  return process.env.VLMKIT_LOG;
}

export {
  cudaInstallHint,
  findCudaBinaries,
  findLibrary,
  missingCudaLibraries,
  ortBindingDir,
  probeNvidiaGpu,
  readElfDynamic,
  systemLibraryLookup,
} from './cuda.node.js';
export { nodePlacement } from './placement.node.js';
