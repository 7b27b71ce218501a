import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tensorFromSafetensors, Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';

export const FIXTURES = fileURLToPath(new URL('../../../../test-fixtures/', import.meta.url));
export const QFORMER_CASES = `${FIXTURES}qformer/`;
export const GRANITE_TINY = `${FIXTURES}granite-tiny/`;

/**
 * The parameters under `prefix` of a safetensors checkpoint, referenced in
 * place, under the names that follow the prefix (what @vlmkit/weight-mapper
 * will hand over: `model.layerwise_projectors.0.` -> the projector's own names).
 */
export async function weightsUnder(path: string, prefix: string): Promise<Weights> {
  const ckpt = await Checkpoint.open(path);
  const table = new Map<string, ReturnType<typeof tensorFromSafetensors>>();
  for (const name of ckpt.names())
    if (name.startsWith(prefix)) table.set(name.slice(prefix.length), tensorFromSafetensors(ckpt.info(name)));
  await ckpt.close(); // the refs carry file, offset and length; the bytes are read when the model is serialised
  return Weights.from(table);
}

/** Names and shapes of the checkpoint tensors under `prefix`, relative to it, sorted. */
export async function shapesUnder(path: string, prefix: string): Promise<{ name: string; shape: number[] }[]> {
  const ckpt = await Checkpoint.open(path);
  const out = ckpt
    .names()
    .filter((n) => n.startsWith(prefix))
    .map((n) => ({ name: n.slice(prefix.length), shape: [...ckpt.info(n).shape] }))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  await ckpt.close();
  return out;
}

export function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** A float tensor of a safetensors file as float32 data and its shape. */
export async function readTensor(path: string, name: string): Promise<{ data: Float32Array; shape: number[] }> {
  const ckpt = await Checkpoint.open(path);
  try {
    return { data: await ckpt.readFloat32(name), shape: [...ckpt.info(name).shape] };
  } finally {
    await ckpt.close();
  }
}
