import { fileURLToPath } from 'node:url';
import { tensorFromSafetensors, Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';

export const FIXTURES = fileURLToPath(new URL('../../../../test-fixtures/', import.meta.url));

/** vLLM's hf_to_vllm_mapper substring renames for the resampler (what @vlmkit/weight-mapper will do). */
const RENAMES: readonly [string, string][] = [
  ['spatial_linear.0.', 'spatial_linear1.'],
  ['spatial_linear.2.', 'spatial_linear2.'],
  ['spatial_linear.3.', 'spatial_norm.'],
  ['temporal_linear.0.', 'temporal_linear1.'],
  ['temporal_linear.2.', 'temporal_linear2.'],
  ['temporal_linear.3.', 'temporal_norm.'],
];

const PREFIX = 'model.resampler_model.';

/** The resampler's parameters of a hub-layout checkpoint, referenced in place, under the component's names. */
export async function resamplerWeights(
  checkpointDir: string,
): Promise<{ weights: Weights; hubNames: Map<string, string>; ckpt: Checkpoint }> {
  const ckpt = await Checkpoint.open(checkpointDir);
  const table = new Map<string, ReturnType<typeof tensorFromSafetensors>>();
  const hubNames = new Map<string, string>();
  for (const hub of ckpt.names()) {
    if (!hub.startsWith(PREFIX)) continue;
    let name = hub.slice(PREFIX.length);
    for (const [from, to] of RENAMES) name = name.replace(from, to);
    table.set(name, tensorFromSafetensors(ckpt.info(hub)));
    hubNames.set(name, hub);
  }
  return { weights: Weights.from(table), hubNames, ckpt };
}

/** A case directory's inputs.safetensors and expected.safetensors. */
export async function readCase(dir: string): Promise<{ inputs: Checkpoint; expected: Checkpoint }> {
  return { inputs: await Checkpoint.open(`${dir}/inputs.safetensors`), expected: await Checkpoint.open(`${dir}/expected.safetensors`) };
}

/** An int64 [n, 3] grid_thw tensor as rows of [t, h, w]. */
export async function readGrids(ckpt: Checkpoint, name: string): Promise<[number, number, number][]> {
  const t = await ckpt.read(name);
  const data = Array.from(t.data as BigInt64Array, Number);
  const out: [number, number, number][] = [];
  for (let i = 0; i < data.length; i += 3) out.push([data[i]!, data[i + 1]!, data[i + 2]!]);
  return out;
}
