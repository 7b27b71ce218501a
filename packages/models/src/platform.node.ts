// Node's side of @vlmkit/models, reached as `#platform` (package.json "imports"; a browser build gets
// ./platform.browser.ts instead). Everything that needs Node (a path, the file system, /proc/meminfo, the CUDA
// probe, process warnings) is here or in a `*.node.ts` module only this one imports: the rest of the package is
// platform-free. Two kinds of exports: the Node-only public API that index.ts re-exports (graph cache, export,
// inspect, output files), and the few primitives the platform-free load path calls for a directory path.
import { join, resolve } from 'node:path';
import { chooseDevice, type DeviceRequest, findCudaBinaries, probeNvidiaGpu } from '@vlmkit/runtime';
import { Checkpoint, readRegularTextFile } from '@vlmkit/safetensors';
import { type LoraAdapter, readLoraAdapter } from '@vlmkit/weight-mapper';
import type * as ExportModule from './export.node.js';
import type * as InspectModule from './inspect.node.js';
import type { ProfileName } from './profiles.js';

export { sha256File } from './cache-files.node.js';
export { FIXTURE_DIR } from './fixture-dir.node.js';
export { defaultCacheDir, GraphCache } from './graph-cache.node.js';
export { readNamedTensors, writeNamedTensors } from './inputs-file.node.js';
export { outputDir, outputFile } from './output-file.node.js';
export { cachedSession, graphKey, memAvailable } from './session-cache.node.js';

// Export and inspect read the registered families (./families.ts), whose modules import this one: loaded on
// first call, so that `#platform` stays below the family modules and no import cycle runs through it.
export const exportModel: typeof ExportModule.exportModel = async (...args) => (await import('./export.node.js')).exportModel(...args);
export const inspectCheckpoint: typeof InspectModule.inspectCheckpoint = async (...args) =>
  (await import('./inspect.node.js')).inspectCheckpoint(...args);

/** `name` in the checkpoint directory `dir` (absolute). */
export function dirFile(dir: string, name: string): string {
  return join(resolve(dir), name);
}

/** The checkpoint directory as an absolute path. */
export function resolveDir(dir: string): string {
  return resolve(dir);
}

/** A side file's text (config.json, generation_config.json): a regular file of bounded size (safetensors' reader). */
export function readText(path: string): Promise<string> {
  return readRegularTextFile(path);
}

/** The checkpoint in directory `dir` (HF's file rule: model.safetensors, else the index's shards). */
export function openCheckpoint(dir: string): Promise<Checkpoint> {
  return Checkpoint.open(dir);
}

/** A PEFT LoRA adapter directory read against `ckpt`, with the files its graph-cache entry depends on. */
export async function readAdapter(dir: string, ckpt: Checkpoint): Promise<{ adapter: LoraAdapter; files: string[] }> {
  const adapter = await readLoraAdapter(resolve(dir), ckpt);
  return { adapter, files: [join(adapter.dir, 'adapter_model.safetensors'), join(adapter.dir, 'adapter_config.json')] };
}

/** A process warning (type VlmkitWarning) with its code. */
export function warn(message: string, code: string): void {
  process.emitWarning(message, { type: 'VlmkitWarning', code });
}

/**
 * The profile a device request plans for: 'cpu' or 'cuda' (runtime's `chooseDevice`: 'auto' is CUDA when its EP
 * and a GPU answer); a page's devices plan with 'web' ('wasm') and 'webgpu' (the runtime refuses them in Node).
 */
export function deviceProfile(device: DeviceRequest | undefined): ProfileName {
  if (device === 'cpu' || device === 'cuda') return device;
  if (device === 'wasm') return 'web';
  if (device === 'webgpu') return 'webgpu';
  return chooseDevice(device ?? 'auto', { binaries: findCudaBinaries(), gpu: probeNvidiaGpu }).device;
}

/** The device a load's profile plans for, before anything is opened: in Node the request itself (`deviceProfile` reads it). */
export async function planDevice(device: DeviceRequest | undefined): Promise<DeviceRequest | undefined> {
  return device;
}

/** Whether the planned device computes float16 natively (a profile's `preferFloat16`): CUDA does, ORT's x86 CPU EP not. */
export async function hasFloat16Kernels(device: DeviceRequest | undefined): Promise<boolean> {
  return deviceProfile(device) === 'cuda';
}
