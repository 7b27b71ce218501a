import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type TensorRef, tensorFromSafetensors, Weights } from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { canonicalName, type RenameRule } from '@vlmkit/weight-mapper';

export const FIXTURES = fileURLToPath(new URL('../../../../test-fixtures/', import.meta.url));

/** The hub layout's vision tower prefix (ERNIE, Granite's SigLIP, Qwen3-VL; the weight mapper's job, stripped by hand in tests). */
const PREFIXES = ['model.vision_model.', 'vision_model.', 'model.visual.'];

export interface FixtureTower {
  config: unknown;
  weights: Weights;
  /** The same parameters read as float32 (bf16/f16 widened exactly), for the plain-TS reference. */
  float32: Map<string, Float32Array>;
  close(): Promise<void>;
}

/** The vision tower parameters of a fixture checkpoint, referenced in place, hub names renamed by the family's `renames`. */
export async function loadFixtureTower(checkpoint: string, renames: readonly RenameRule[] = []): Promise<FixtureTower> {
  const dir = join(FIXTURES, checkpoint);
  const ckpt = await Checkpoint.open(dir);
  const refs = new Map<string, TensorRef>();
  const float32 = new Map<string, Float32Array>();
  for (const name of ckpt.names()) {
    const prefix = PREFIXES.find((p) => name.startsWith(p));
    if (prefix === undefined) continue;
    const local = canonicalName(renames, name).slice(prefix.length);
    refs.set(local, tensorFromSafetensors(ckpt.info(name)));
    float32.set(local, await ckpt.readFloat32(name));
  }
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as unknown;
  return { config, weights: Weights.from(refs), float32, close: () => ckpt.close() };
}

/** A case's inputs and expected tensors: floats as float32, integers as plain numbers. */
export async function loadCase(model: string, name: string): Promise<Map<string, { shape: number[]; data: Float32Array | number[] }>> {
  const out = new Map<string, { shape: number[]; data: Float32Array | number[] }>();
  for (const file of ['inputs.safetensors', 'expected.safetensors']) {
    const ck = await Checkpoint.open(join(FIXTURES, model, 'cases', name, file));
    try {
      for (const t of ck.names()) {
        const info = ck.info(t);
        if (info.dtype === 'I64' || info.dtype === 'I32') {
          const raw = (await ck.read(t)).data as BigInt64Array | Int32Array;
          out.set(t, { shape: info.shape, data: Array.from(raw, Number) });
        } else {
          out.set(t, { shape: info.shape, data: await ck.readFloat32(t) });
        }
      }
    } finally {
      await ck.close();
    }
  }
  return out;
}
