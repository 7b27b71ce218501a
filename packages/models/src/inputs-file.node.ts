import { fromSafetensors, type HostTensor, toSafetensors } from '@vlmkit/runtime';
import { SafetensorsFile, type Tensor, writeSafetensors } from '@vlmkit/safetensors';
import { type OutputFile, outputFile } from './output-file.node.js';

/** Every tensor of a .safetensors file by name, as host tensors (bf16 upcast to float32): HF forward kwargs, expected outputs. */
export async function readNamedTensors(path: string): Promise<Record<string, HostTensor>> {
  const f = await SafetensorsFile.open(path);
  try {
    const out: Record<string, HostTensor> = {};
    for (const name of f.names()) out[name] = fromSafetensors(await f.read(name));
    return out;
  } finally {
    await f.close();
  }
}

/**
 * Writes host tensors by name to a .safetensors file, atomically (a temporary file renamed over the target).
 * `target` is a path, or an `outputFile(path, reads)` checked before the command read anything, so that the
 * output never replaces a file the command reads; a path alone is still refused when it is a symbolic link, a
 * directory or a special file (ModelError OUTPUT_NOT_REGULAR_FILE).
 */
export async function writeNamedTensors(
  target: string | OutputFile,
  tensors: Record<string, HostTensor>,
  metadata: Record<string, string> = { producer: 'vlmkit' },
): Promise<void> {
  const out: Record<string, Tensor> = {};
  for (const [k, v] of Object.entries(tensors)) out[k] = toSafetensors(v);
  const file = typeof target === 'string' ? await outputFile(target, []) : target;
  await file.write((tmp) => writeSafetensors(tmp, out, metadata));
}
