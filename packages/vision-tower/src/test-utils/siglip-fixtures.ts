import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  lazyTensor,
  normalizeDType,
  type TensorRef,
  type TypedArray,
  tensorFromSafetensors,
  typedArrayFor,
  Weights,
} from '@vlmkit/onnx-graph';
import { Checkpoint } from '@vlmkit/safetensors';
import { FIXTURES } from './fixtures.js';

/** HF 5.17 saves `model.vision_tower.*`; hub files have `model.vision_tower.vision_model.*` (the weight mapper's job; done by hand here). */
const PREFIXES = ['model.vision_tower.vision_model.', 'model.vision_tower.'];

/**
 * SigLIP parameters of a fixture checkpoint under the component's names:
 * prefix stripped, q/k/v packed into vLLM's `self_attn.qkv_proj` (rows q, k, v)
 * by a lazy tensor read at save time.
 */
export async function loadSiglipFixtureTower(checkpoint: string) {
  const dir = join(FIXTURES, checkpoint);
  const ckpt = await Checkpoint.open(dir);
  const refs = new Map<string, TensorRef>();
  const local = new Map<string, string>();
  for (const name of ckpt.names()) {
    const prefix = PREFIXES.find((p) => name.startsWith(p));
    if (prefix !== undefined) local.set(name.slice(prefix.length), name);
  }
  for (const [name, full] of local) {
    const m = /^(.*self_attn)\.q_proj\.(weight|bias)$/.exec(name);
    if (m) {
      const parts = ['q', 'k', 'v'].map((x) => ckpt.info(local.get(`${m[1]}.${x}_proj.${m[2]}`)!));
      const shape = [3 * parts[0]!.shape[0]!, ...parts[0]!.shape.slice(1)];
      const dtype = parts[0]!.dtype;
      refs.set(
        `${m[1]}.qkv_proj.${m[2]}`,
        lazyTensor(dtype, shape, async () => {
          const data = await Promise.all(parts.map(async (p) => (await ckpt.read(p.name)).data as TypedArray));
          const out = typedArrayFor(
            normalizeDType(dtype),
            data.reduce((a, d) => a + d.length, 0),
          );
          let at = 0;
          for (const d of data) {
            (out as Float32Array).set(d as Float32Array, at);
            at += d.length;
          }
          return out;
        }),
      );
    } else if (!/self_attn\.[kv]_proj\./.test(name)) {
      refs.set(name, tensorFromSafetensors(ckpt.info(full)));
    }
  }
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as unknown;
  /** A parameter as float32, by its component name (unpacked names only). */
  const float32 = (name: string) => ckpt.readFloat32(local.get(name) ?? name);
  return { config, weights: Weights.from(refs), float32, close: () => ckpt.close() };
}
