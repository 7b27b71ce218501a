// The browser's side of @vlmkit/models, reached as `#platform` under the "browser" condition (./platform.node.ts
// is Node's; each export is typed against Node's so that the two cannot drift). A page has no paths and no file
// system: a model loads from its files (`ModelFiles`: urlFiles, blobFiles of @vlmkit/safetensors), its graphs are
// built in memory and cached in the origin's private file system (./graph-store.ts, ./graph-cache.browser.ts),
// and what needs the file system (the disk graph cache, export, inspect, output files) refuses with
// UNSUPPORTED_PLATFORM, saying what to use.
import { probeWebGpu } from '@vlmkit/runtime';
import { ModelError } from './errors.js';
import type * as NodePlatform from './platform.node.js';

function unsupported(what: string, instead: string): ModelError {
  return new ModelError('UNSUPPORTED_PLATFORM', `${what} needs Node (the file system) and is not available in a browser; ${instead}.`);
}

const BY_FILES =
  'load the model from its files instead: fromPretrained(urlFiles(url)) or fromPretrained(blobFiles(files)) (@vlmkit/safetensors)';
const PAGE_CACHE = "a page caches its graphs in the origin's private file system instead (LoadOptions.cacheDir 'opfs:vlmkit', the default)";
const NODE_ONLY = 'run it in Node (the vlmkit CLI or @vlmkit/models there)';

export const sha256File: typeof NodePlatform.sha256File = async (path) => {
  throw unsupported(`hashing ${path}`, NODE_ONLY);
};

/**
 * The checkout's test-fixtures/ as a URL beside this module: where a dev server that serves the repository
 * root has them (`urlFiles(new URL('ernie-tiny/', FIXTURE_DIR))`). Node's is a path.
 */
// (`import.meta.url` through a variable: a bundler would take `new URL(literal, import.meta.url)` for an asset.)
const here = import.meta.url;
export const FIXTURE_DIR: typeof NodePlatform.FIXTURE_DIR = new URL('../../../test-fixtures/', here).href;

export const defaultCacheDir: typeof NodePlatform.defaultCacheDir = () => {
  throw unsupported('the graph cache directory', PAGE_CACHE);
};

/** The disk graph cache: Node only. A page's is in OPFS (./graph-cache.browser.ts), keyed as Node's. */
export const GraphCache: Pick<typeof NodePlatform.GraphCache, 'open'> = {
  open: async () => {
    throw unsupported('the graph cache', PAGE_CACHE);
  },
};

export const readNamedTensors: typeof NodePlatform.readNamedTensors = async (path) => {
  throw unsupported(
    `reading ${path}`,
    'pass the tensors as HostTensors (@vlmkit/runtime), or read a .safetensors Blob with @vlmkit/safetensors',
  );
};

export const writeNamedTensors: typeof NodePlatform.writeNamedTensors = async () => {
  throw unsupported(
    'writing a .safetensors file',
    'serialize the tensors with serializeSafetensors (@vlmkit/safetensors) and save the bytes',
  );
};

export const outputFile: typeof NodePlatform.outputFile = async (path) => {
  throw unsupported(`writing ${path}`, NODE_ONLY);
};

export const outputDir: typeof NodePlatform.outputDir = async (path) => {
  throw unsupported(`writing ${path}`, NODE_ONLY);
};

export const cachedSession: typeof NodePlatform.cachedSession = async () => {
  throw unsupported('the graph cache', PAGE_CACHE);
};

export const graphKey: typeof NodePlatform.graphKey = async () => {
  throw unsupported('the graph cache key', PAGE_CACHE);
};

/** A page is told no figure of available memory: no check is made (WASM's own limit is 4 GiB, README). */
export const memAvailable: typeof NodePlatform.memAvailable = async () => undefined;

export const exportModel: typeof NodePlatform.exportModel = async () => {
  throw unsupported('vlmkit export (ONNX files and a manifest written to a directory)', NODE_ONLY);
};

export const inspectCheckpoint: typeof NodePlatform.inspectCheckpoint = async () => {
  throw unsupported('inspect (a checkpoint directory checked by path)', NODE_ONLY);
};

export const dirFile: typeof NodePlatform.dirFile = (dir) => {
  throw unsupported(`the checkpoint directory ${dir}`, BY_FILES);
};

export const resolveDir: typeof NodePlatform.resolveDir = (dir) => {
  throw unsupported(`the checkpoint directory ${dir}`, BY_FILES);
};

export const readText: typeof NodePlatform.readText = async (path) => {
  throw unsupported(`reading ${path}`, BY_FILES);
};

export const openCheckpoint: typeof NodePlatform.openCheckpoint = async (dir) => {
  throw unsupported(`the checkpoint directory ${dir}`, BY_FILES);
};

export const readAdapter: typeof NodePlatform.readAdapter = async (dir) => {
  throw unsupported(`the LoRA adapter directory ${dir}`, "pass the adapter's files instead: adapter: urlFiles(url) or blobFiles(files)");
};

/** Where Node emits a process warning, a page logs it. */
export const warn: typeof NodePlatform.warn = (message, code) => {
  console.warn(`VlmkitWarning [${code}]: ${message}`);
};

/** A page's WebGPU plans with the webgpu profile, its WASM with the web profile (./profiles.ts). */
export const deviceProfile: typeof NodePlatform.deviceProfile = (device) => (device === 'webgpu' ? 'webgpu' : 'web');

/**
 * 'auto' (and no device) planned as what the runtime will choose: WebGPU when `navigator.gpu` gives an adapter,
 * else WASM; 'cpu' is WASM. The session still gets the request as given (the runtime falls back to WASM when
 * WebGPU fails to start; the webgpu profile's graphs run there too).
 */
export const planDevice: typeof NodePlatform.planDevice = async (device) => {
  if (device === 'auto' || device === undefined) return (await probeWebGpu()).found ? 'webgpu' : 'wasm';
  return device === 'cpu' ? 'wasm' : device;
};

/** WebGPU has float16 kernels where the adapter has 'shader-f16' (runtime refuses float16 graphs elsewhere). */
export const hasFloat16Kernels: typeof NodePlatform.hasFloat16Kernels = async (device) =>
  device === 'webgpu' && (await probeWebGpu()).features.includes('shader-f16');
