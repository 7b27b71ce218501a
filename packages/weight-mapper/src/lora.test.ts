import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checkpoint, SafetensorsFile, writeSafetensors } from '@vlmkit/safetensors';
import { describe, expect, it } from 'vitest';
import { MappingError } from './errors.js';
import { mapGranite4Vision } from './granite4-vision.js';
import { loraOverlay, readLoraAdapter } from './lora.js';
import { refBytes, tempDir } from './test-utils/temp.js';
import { graniteTinyComponents } from './test-utils/tiny-components.js';

const fixtures = fileURLToPath(new URL('../../../test-fixtures/', import.meta.url));
const base = join(fixtures, 'granite-tiny');
const adapterDir = join(fixtures, 'granite-tiny-lora');

describe('LoRA merge (PEFT adapter, W + alpha/r * B A)', () => {
  it('reads the fixture adapter: 56 targets (7 modules x 8 layers), scale alpha/r = 2', async () => {
    const ckpt = await Checkpoint.open(base);
    const a = await readLoraAdapter(adapterDir, ckpt.names());
    expect(a.rank).toBe(4);
    expect(a.scale).toBe(2);
    expect(a.targets.size).toBe(56);
    expect(a.targets.get('model.language_model.layers.3.self_attn.k_proj.weight')).toEqual({
      a: 'base_model.model.model.language_model.layers.3.self_attn.k_proj.lora_A.weight',
      b: 'base_model.model.model.language_model.layers.3.self_attn.k_proj.lora_B.weight',
    });
    await ckpt.close();
  });

  it('merged tensors are lazy, exact W + 2 B A in float32, and flow through packing (qkv_proj rows)', async () => {
    const ckpt = await Checkpoint.open(base);
    const adapter = await readLoraAdapter(adapterDir, ckpt.names());
    const plain = await mapGranite4Vision(ckpt, graniteTinyComponents());
    const merged = await mapGranite4Vision(ckpt, graniteTinyComponents(), { overlay: loraOverlay(adapter) });
    // Vision weights are not targets: still referenced in place.
    const vName = plain.vision.names().find((n) => n.endsWith('fc1.weight'))!;
    expect(merged.vision.get(vName).kind).toBe('file');
    // The packed qkv of layer 3: its k rows are W_k + 2 B_k A_k.
    const qkv = new Float32Array((await refBytes(merged.decoder.get('layers.3.self_attn.qkv_proj.weight'))).slice().buffer);
    const st = await SafetensorsFile.open(join(adapterDir, 'adapter_model.safetensors'));
    const t = adapter.targets.get('model.language_model.layers.3.self_attn.k_proj.weight')!;
    const A = (await st.read(t.a)).data as Float32Array;
    const B = (await st.read(t.b)).data as Float32Array;
    await st.close();
    const Wk = (await ckpt.read('model.language_model.layers.3.self_attn.k_proj.weight')).data as Float32Array;
    const [D, r, kvRows, qRows] = [64, 4, 32, 64];
    let maxErr = 0;
    for (let i = 0; i < kvRows; i++)
      for (let j = 0; j < D; j++) {
        let ba = 0;
        for (let k = 0; k < r; k++) ba += B[i * r + k]! * A[k * D + j]!;
        maxErr = Math.max(maxErr, Math.abs(qkv[(qRows + i) * D + j]! - (Wk[i * D + j]! + 2 * ba)));
      }
    expect(maxErr).toBeLessThan(1e-5);
    await ckpt.close();
  });

  it('an adapter for another model names the missing target and the nearest checkpoint names', async () => {
    const dir = await tempDir();
    const bad = join(dir, 'adapter');
    await mkdir(bad);
    await writeFile(join(bad, 'adapter_config.json'), JSON.stringify({ r: 2, lora_alpha: 4 }));
    await writeSafetensors(join(bad, 'adapter_model.safetensors'), {
      'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight': { dtype: 'F32', shape: [2, 64], data: new Float32Array(128) },
      'base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight': { dtype: 'F32', shape: [64, 2], data: new Float32Array(128) },
    });
    const ckpt = await Checkpoint.open(base);
    const err = await readLoraAdapter(bad, ckpt.names()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MappingError);
    expect((err as MappingError).code).toBe('MISSING_TENSOR');
    expect((err as MappingError).message).toMatch(
      /targets 'model.layers.0.self_attn.q_proj.weight'.*nearest: 'model.language_model.layers.0.self_attn.q_proj.weight'/,
    );
    await writeFile(join(bad, 'adapter_config.json'), JSON.stringify({ r: 0 }));
    await expect(readLoraAdapter(bad, ckpt.names())).rejects.toThrow(/r must be a positive integer/);
    await ckpt.close();
  });
});
