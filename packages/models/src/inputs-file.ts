import { fromSafetensors, type HostTensor, toSafetensors } from '@vlmkit/runtime';
import { SafetensorsFile, type Tensor, writeSafetensors } from '@vlmkit/safetensors';

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

/** Writes host tensors by name to a .safetensors file. */
export async function writeNamedTensors(
  path: string,
  tensors: Record<string, HostTensor>,
  metadata: Record<string, string> = { producer: 'vlmkit' },
): Promise<void> {
  const out: Record<string, Tensor> = {};
  for (const [k, v] of Object.entries(tensors)) out[k] = toSafetensors(v);
  await writeSafetensors(path, out, metadata);
}
