// Loading a model in the page, shared by the demo and the harness: the checkpoint's files from a picked
// folder or a URL, the model built from them by @vlmkit/models on onnxruntime-web.
import { type LoadProgress, loadPretrained, type PretrainedModel } from '@vlmkit/models';
import { blobFiles, type ModelFiles, urlFiles } from '@vlmkit/safetensors';
import { configureWasm } from './ort-web.js';

/** 'auto': WebGPU when navigator.gpu gives an adapter, else WASM. */
export type WebDevice = 'auto' | 'wasm' | 'webgpu';

/** A picked folder (`<input webkitdirectory>`): names relative to the folder. */
export function filesFromFolder(files: File[]): ModelFiles {
  return blobFiles(files);
}

/** A folder served over HTTP(S); read with range requests, a tensor at a time. */
export function filesFromUrl(url: string): ModelFiles {
  return urlFiles(url.endsWith('/') ? url : `${url}/`);
}

export async function loadModel(files: ModelFiles, device: WebDevice, onProgress?: (p: LoadProgress) => void): Promise<PretrainedModel> {
  configureWasm();
  return loadPretrained(files, { device, onProgress });
}

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/** A load step as a progress bar's fraction and a line of text. */
export function progressLine(p: LoadProgress): { fraction: number; text: string } {
  let part = 0;
  let detail = '';
  if (p.detail?.kind === 'read') {
    part = p.detail.totalBytes > 0 ? p.detail.bytes / p.detail.totalBytes : 0;
    detail = `: ${p.detail.file} ${mib(p.detail.bytes)} of ${mib(p.detail.totalBytes)}`;
  } else if (p.detail?.kind === 'quantize') {
    part = p.detail.layer / p.detail.layers;
    detail = `: quantizing ${p.detail.stack} layer ${p.detail.layer} of ${p.detail.layers}`;
  }
  const verb = { weights: 'reading weights', build: 'building', session: 'creating session' }[p.stage];
  return { fraction: Math.min(1, (p.done + part) / Math.max(1, p.total)), text: `${verb} ${p.name}${detail}` };
}
