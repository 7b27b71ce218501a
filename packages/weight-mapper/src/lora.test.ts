import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { blobFiles, Checkpoint, SafetensorsFile, type Tensor, writeSafetensors } from '@vlmkit/safetensors';
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
      rank: 4,
      alpha: 8,
      scale: 2,
    });
    await ckpt.close();
  });

  it('an adapter read through ModelFiles (a picked folder, a URL) is the one read by path, and merges to the same bytes', async () => {
    const ckpt = await Checkpoint.open(base);
    const files = async (names: string[]) =>
      blobFiles(
        Object.fromEntries(await Promise.all(names.map(async (n) => [n, new Blob([await readFile(join(adapterDir, n))])]))),
        'lora',
      );
    const byPath = await readLoraAdapter(adapterDir, ckpt.names());
    const byFiles = await readLoraAdapter(await files(['adapter_config.json', 'adapter_model.safetensors']), ckpt.names());
    expect(byFiles.dir).toBe('lora');
    expect([...byFiles.targets]).toEqual([...byPath.targets]);
    expect([byFiles.rank, byFiles.alpha, byFiles.scale]).toEqual([byPath.rank, byPath.alpha, byPath.scale]);
    const name = 'layers.3.self_attn.qkv_proj.weight';
    const merged = await mapGranite4Vision(ckpt, graniteTinyComponents(), { overlay: loraOverlay(byPath) });
    const viaFiles = await mapGranite4Vision(ckpt, graniteTinyComponents(), { overlay: loraOverlay(byFiles) });
    expect(Buffer.compare(await refBytes(viaFiles.decoder.get(name)), await refBytes(merged.decoder.get(name)))).toBe(0);
    const noWeights = await readLoraAdapter(await files(['adapter_config.json']), ckpt.names()).catch((e: Error) => e);
    expect([(noWeights as { code?: string }).code, (noWeights as Error).message]).toEqual([
      'FILE_NOT_FOUND',
      'lora/adapter_model.safetensors: expected a file here, found nothing.',
    ]);
    const noConfig = await readLoraAdapter(await files(['adapter_model.safetensors']), ckpt.names()).catch((e: Error) => e);
    expect(noConfig).toBeInstanceOf(MappingError);
    expect((noConfig as Error).message).toContain('lora/adapter_config.json');
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

/** The fixture adapter copied to a temp dir with its config changed and its tensors changed by `edit`. */
async function variant(config: Record<string, unknown>, edit: (tensors: Record<string, Tensor>) => void = () => {}): Promise<string> {
  const dir = join(await tempDir(), 'adapter');
  await mkdir(dir);
  const cfg = JSON.parse(await readFile(join(adapterDir, 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
  await writeFile(join(dir, 'adapter_config.json'), JSON.stringify({ ...cfg, ...config }));
  const st = await SafetensorsFile.open(join(adapterDir, 'adapter_model.safetensors'));
  const tensors: Record<string, Tensor> = {};
  for (const n of st.names()) tensors[n] = await st.read(n);
  await st.close();
  edit(tensors);
  await writeSafetensors(join(dir, 'adapter_model.safetensors'), tensors);
  return dir;
}

const PEFT = 'base_model.model.model.language_model.layers';

/** The first `r` rows of A [R, in] and columns of B [out, R]: a rank-r adapter for the same module. */
function truncateRank(tensors: Record<string, Tensor>, module: string, r: number): void {
  const A = tensors[`${module}.lora_A.weight`]!;
  const B = tensors[`${module}.lora_B.weight`]!;
  const [R, inp] = A.shape as [number, number];
  const out = B.shape[0]!;
  tensors[`${module}.lora_A.weight`] = { dtype: 'F32', shape: [r, inp], data: (A.data as Float32Array).slice(0, r * inp) };
  const b = new Float32Array(out * r);
  for (let i = 0; i < out; i++) for (let k = 0; k < r; k++) b[i * r + k] = (B.data as Float32Array)[i * R + k]!;
  tensors[`${module}.lora_B.weight`] = { dtype: 'F32', shape: [out, r], data: b };
}

async function mappingError(p: Promise<unknown>): Promise<MappingError> {
  const e = await p.catch((x: unknown) => x);
  expect(e).toBeInstanceOf(MappingError);
  return e as MappingError;
}

describe('LoRA config checked against its tensors', () => {
  it('r 8 with rank-4 tensors is SHAPE_MISMATCH naming the tensor, its shape and r (it ran and gave other tokens)', async () => {
    const dir = await variant({ r: 8 });
    const ckpt = await Checkpoint.open(base);
    const e = await mappingError(readLoraAdapter(dir, ckpt));
    expect(e.code).toBe('SHAPE_MISMATCH');
    expect(e.message).toMatch(
      /lora_A\.weight' is \[4, \d+\] and its lora_B \[\d+, 4\], but .*adapter_config\.json gives '.*' r = 8; expected A \[8, in\] and B \[out, 8\]/,
    );
    await ckpt.close();
  });

  it('rank_pattern and alpha_pattern are honoured per module as PEFT get_pattern_key matches them', async () => {
    const q0 = `${PEFT}.0.self_attn.q_proj`;
    const dir = await variant(
      { r: 4, lora_alpha: 8, rank_pattern: { 'model.language_model.layers.0.self_attn.q_proj': 2 }, alpha_pattern: { k_proj: 16 } },
      (t) => truncateRank(t, q0, 2),
    );
    const ckpt = await Checkpoint.open(base);
    const adapter = await readLoraAdapter(dir, ckpt);
    const target = (m: string) => adapter.targets.get(`model.language_model.layers.${m}.weight`)!;
    // q_proj of layer 0: rank 2, alpha 8 -> 4; every k_proj: rank 4, alpha 16 -> 4; the rest: 8 / 4 = 2.
    expect([target('0.self_attn.q_proj').rank, target('0.self_attn.q_proj').scale]).toEqual([2, 4]);
    expect([target('1.self_attn.q_proj').rank, target('1.self_attn.q_proj').scale]).toEqual([4, 2]);
    expect([target('5.self_attn.k_proj').alpha, target('5.self_attn.k_proj').scale]).toEqual([16, 4]);
    expect(target('5.mlp.down_proj').scale).toBe(2);
    // A pattern is matched at a dot boundary: 'proj' alone matches no module path ending '.proj'.
    const dotted = await readLoraAdapter(await variant({ alpha_pattern: { proj: 100 } }), ckpt);
    expect(dotted.targets.get('model.language_model.layers.0.self_attn.q_proj.weight')!.alpha).toBe(8);

    // The merged weight uses each module's own scale: W + scale * B A, computed here independently.
    const overlay = loraOverlay(adapter);
    const st = await SafetensorsFile.open(join(dir, 'adapter_model.safetensors'));
    for (const m of ['0.self_attn.q_proj', '0.self_attn.k_proj', '0.mlp.up_proj']) {
      const name = `model.language_model.layers.${m}.weight`;
      const W = await ckpt.read(name);
      const merged = (await overlay.apply(name, W)).data as Float32Array;
      const A = (await st.read(target(m).a)).data as Float32Array;
      const B = (await st.read(target(m).b)).data as Float32Array;
      const [out, inp] = W.shape as [number, number];
      const r = target(m).rank;
      const scale = m === '0.self_attn.q_proj' ? 8 / 2 : m.includes('k_proj') ? 16 / 4 : 8 / 4;
      let maxErr = 0;
      for (let i = 0; i < out; i++)
        for (let j = 0; j < inp; j++) {
          let ba = 0;
          for (let k = 0; k < r; k++) ba += B[i * r + k]! * A[k * inp + j]!;
          maxErr = Math.max(maxErr, Math.abs(merged[i * inp + j]! - ((W.data as Float32Array)[i * inp + j]! + scale * ba)));
        }
      expect(maxErr, m).toBeLessThan(1e-5);
    }
    await st.close();
    await ckpt.close();
  });

  it('a rank-2 module without its rank_pattern entry names the module and r', async () => {
    const dir = await variant({}, (t) => truncateRank(t, `${PEFT}.0.self_attn.q_proj`, 2));
    const e = await mappingError(readLoraAdapter(dir, await Checkpoint.open(base)));
    expect(e.code).toBe('SHAPE_MISMATCH');
    expect(e.message).toMatch(/gives 'model\.language_model\.layers\.0\.self_attn\.q_proj' r = 4/);
    const wrongPattern = await variant({ rank_pattern: { q_proj: 3 } });
    expect((await mappingError(readLoraAdapter(wrongPattern, await Checkpoint.open(base)))).message).toMatch(
      /rank_pattern\["q_proj"\] = 3; expected A \[3, in\]/,
    );
  });

  it('tensors for modules target_modules does not select (or exclude_modules removes) are CONFIG_INVALID', async () => {
    const ckpt = await Checkpoint.open(base);
    const only = await mappingError(readLoraAdapter(await variant({ target_modules: ['q_proj', 'v_proj'] }), ckpt));
    expect(only.code).toBe('CONFIG_INVALID');
    expect(only.message).toMatch(
      /tensors for 'model\.language_model\.layers\.0\.(self_attn\.[ko]|mlp\.(gate|up|down))_proj', which target_modules \["q_proj","v_proj"\]/,
    );
    const regexTargets = await mappingError(readLoraAdapter(await variant({ target_modules: '.*\\.(q|k|v|o)_proj' }), ckpt));
    expect(regexTargets.message).toMatch(/'model\.language_model\.layers\.0\.mlp\.(gate|up|down)_proj', which target_modules/);
    const excluded = await mappingError(readLoraAdapter(await variant({ exclude_modules: ['down_proj'] }), ckpt));
    expect(excluded.message).toMatch(/mlp\.down_proj', which .*exclude_modules \["down_proj"\] does not select/);
    // A regex that selects them all is fine.
    expect((await readLoraAdapter(await variant({ target_modules: '.*_proj' }), ckpt)).targets.size).toBe(56);
    await ckpt.close();
  });

  it('A / B that do not fit the base weight are SHAPE_MISMATCH at read time, naming both shapes', async () => {
    const k = `${PEFT}.2.self_attn.k_proj`;
    const dir = await variant({}, (t) => {
      const A = t[`${k}.lora_A.weight`]!;
      t[`${k}.lora_A.weight`] = { dtype: 'F32', shape: [4, 32], data: (A.data as Float32Array).slice(0, 128) };
    });
    const e = await mappingError(readLoraAdapter(dir, await Checkpoint.open(base)));
    expect(e.code).toBe('SHAPE_MISMATCH');
    expect(e.message).toMatch(
      /'.*k_proj\.lora_A\.weight' \[4, 32\] \/ lora_B \[32, 4\] do not fit 'model\.language_model\.layers\.2\.self_attn\.k_proj\.weight' \[32, 64\]; expected A \[4, 64\] and B \[32, 4\]/,
    );
  });

  it.each([
    ['use_dora', true, 'use_dora must be unset (DoRA adapters are not supported), got true'],
    ['fan_in_fan_out', true, 'fan_in_fan_out must be unset (fan_in_fan_out (Conv1D weights stored [in, out]) is not supported), got true'],
    ['bias', 'all', 'bias must be unset (trained biases are not supported (bias must be "none")), got "all"'],
    [
      'modules_to_save',
      ['lm_head'],
      'modules_to_save must be unset (whole saved modules (modules_to_save) are not supported), got ["lm_head"]',
    ],
    ['peft_type', 'LOHA', 'peft_type must be unset (only LORA adapters are supported), got "LOHA"'],
    ['rank_pattern', { q_proj: 0 }, 'rank_pattern["q_proj"] must be a positive integer, got 0'],
    ['alpha_pattern', { q_proj: 'x' }, 'alpha_pattern["q_proj"] must be a number, got "x"'],
    ['target_modules', 3, 'target_modules must be a regex string or a list of module names, got 3'],
    ['rank_pattern', { '(?P<x>q)_proj': 2 }, 'rank_pattern pattern "(?P<x>q)_proj" is not a regular expression this reader can use'],
  ])('config %s = %j is refused by name (CONFIG_INVALID)', async (field, value, message) => {
    const e = await mappingError(readLoraAdapter(await variant({ [field]: value }), (await Checkpoint.open(base)).names()));
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toContain(`adapter_config.json: ${message}`);
  });

  it('tensors other than lora_A / lora_B (embedding LoRA, saved modules) and integer A / B are refused by name', async () => {
    const extra = await variant({}, (t) => {
      t['base_model.model.model.language_model.embed_tokens.lora_embedding_A'] = {
        dtype: 'F32',
        shape: [4, 8],
        data: new Float32Array(32),
      };
    });
    const e = await mappingError(readLoraAdapter(extra, await Checkpoint.open(base)));
    expect(e.code).toBe('UNMAPPED_TENSOR');
    expect(e.tensor).toBe('base_model.model.model.language_model.embed_tokens.lora_embedding_A');
    const q = `${PEFT}.1.self_attn.q_proj.lora_B.weight`;
    const ints = await variant({}, (t) => {
      t[q] = { dtype: 'I32', shape: [...t[q]!.shape], data: new Int32Array(t[q]!.data.length) };
    });
    const i = await mappingError(readLoraAdapter(ints, await Checkpoint.open(base)));
    expect(i.code).toBe('UNSUPPORTED_DTYPE');
    expect(i.message).toContain(`'${q}' is I32; expected F32, F16 or BF16`);
  });
});
