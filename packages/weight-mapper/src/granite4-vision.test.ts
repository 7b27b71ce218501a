/**
 * The Granite 4 Vision table against test-fixtures/granite-tiny (written by
 * transformers 5.17). The components' parameter lists are spelled out in
 * test-utils for the tiny config (@vlmkit/models tests the real, derived lists): SigLIP D 32, mlp 64, patch 8, image 64 (64 positions), 4 layers;
 * 4 layerwise + 4 spatial window Q-Former projectors (downsample "2/4":
 * 2x2 queries, 4x4 window positions; Q-Former hidden 32, mlp 64, 1 layer
 * with cross-attention); decoder D 64, 8 layers, 4 q / 2 kv heads of 16,
 * mlp 128, vocab 256, tied embeddings.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checkpoint, type Tensor, writeSafetensors } from '@vlmkit/safetensors';
import { beforeAll, describe, expect, it } from 'vitest';
import { mapGranite4Vision } from './granite4-vision.js';
import { refBytes, tempDir } from './test-utils/temp.js';
import { graniteTinyComponents as components, graniteTinyShapes as expectedShapes } from './test-utils/tiny-components.js';

const fixture = fileURLToPath(new URL('../../../test-fixtures/granite-tiny/', import.meta.url));

const bytesOf = (t: Tensor) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
const cat = (...parts: Uint8Array[]) => Buffer.concat(parts);
const same = (a: Uint8Array, b: Uint8Array) =>
  Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));

describe('mapGranite4Vision on test-fixtures/granite-tiny', () => {
  let ckpt: Checkpoint;
  let mapped: Awaited<ReturnType<typeof mapGranite4Vision>>;
  beforeAll(async () => {
    ckpt = await Checkpoint.open(fixture);
    mapped = await mapGranite4Vision(ckpt, components(), { strict: true });
    return () => ckpt.close();
  });

  it('gives the expected names and shapes, float32 as in the checkpoint', () => {
    const want = expectedShapes();
    for (const component of ['vision', 'projectors', 'decoder'] as const) {
      expect(mapped[component].names()).toEqual(Object.keys(want[component]).sort());
      for (const [name, shape] of Object.entries(want[component])) {
        expect(mapped[component].get(name), `${component} ${name}`).toMatchObject({ shape, dtype: 'float32' });
      }
    }
  });

  it("uses every checkpoint tensor except SigLIP's post_layernorm, which Granite does not read", () => {
    const r = mapped.report;
    expect(r.unmapped).toEqual([]);
    expect(r.missing).toEqual([]);
    expect([...r.ignored].sort()).toEqual(['model.vision_tower.post_layernorm.bias', 'model.vision_tower.post_layernorm.weight']);
    expect(r.consumed.length + r.ignored.length).toBe(ckpt.names().length);
  });

  it('packs q/k/v and gate/up exactly; the rest is referenced in place', async () => {
    const read = async (n: string) => bytesOf(await ckpt.read(n));
    for (const l of [0, 3]) {
      const A = `model.vision_tower.encoder.layers.${l}.self_attn.`;
      for (const s of ['weight', 'bias']) {
        const want = cat(await read(`${A}q_proj.${s}`), await read(`${A}k_proj.${s}`), await read(`${A}v_proj.${s}`));
        expect(same(await refBytes(mapped.vision.get(`encoder.layers.${l}.self_attn.qkv_proj.${s}`)), want), `vision ${l} qkv ${s}`).toBe(
          true,
        );
      }
    }
    for (const l of [0, 7]) {
      const L = `model.language_model.layers.${l}.`;
      const qkv = cat(
        await read(`${L}self_attn.q_proj.weight`),
        await read(`${L}self_attn.k_proj.weight`),
        await read(`${L}self_attn.v_proj.weight`),
      );
      expect(same(await refBytes(mapped.decoder.get(`layers.${l}.self_attn.qkv_proj.weight`)), qkv)).toBe(true);
      const gateUp = cat(await read(`${L}mlp.gate_proj.weight`), await read(`${L}mlp.up_proj.weight`));
      expect(same(await refBytes(mapped.decoder.get(`layers.${l}.mlp.gate_up_proj.weight`)), gateUp)).toBe(true);
    }
    expect(mapped.projectors.get('spatial_projectors.2.query')).toMatchObject({
      kind: 'file',
      byteOffset: ckpt.info('model.spatial_projectors.2.query').byteOffset,
    });
    // Tied: the decoder reads embed_tokens for its head, lm_head is not listed.
    expect(mapped.decoder.has('lm_head.weight')).toBe(false);
  });
});

describe('mapGranite4Vision: the hub 4.0 naming', () => {
  it('accepts shared_mlp.input_linear / output_linear and a vision_model. level, giving the same bytes', async () => {
    const dir = await tempDir();
    const src = await Checkpoint.open(fixture);
    const out: Record<string, Tensor> = {};
    for (const n of src.names()) {
      const m = /^(model\.language_model\.layers\.\d+\.)mlp\.(gate|up|down)_proj\.weight$/.exec(n);
      if (m === null) out[n.replace(/^model\.vision_tower\./, 'model.vision_tower.vision_model.')] = await src.read(n);
      else if (m[2] === 'down') out[`${m[1]}shared_mlp.output_linear.weight`] = await src.read(n);
      else if (m[2] === 'gate') {
        const [gate, up] = [await src.read(n), await src.read(`${m[1]}mlp.up_proj.weight`)];
        out[`${m[1]}shared_mlp.input_linear.weight`] = {
          dtype: 'F32',
          shape: [gate.shape[0]! * 2, gate.shape[1]!],
          data: new Float32Array(cat(bytesOf(gate), bytesOf(up)).buffer.slice(0)),
        };
      }
    }
    await writeSafetensors(join(dir, 'model.safetensors'), out);
    const hub = await Checkpoint.open(dir);
    const mapped = await mapGranite4Vision(hub, components(), { strict: true });
    const ref = await mapGranite4Vision(src, components());
    const gu = mapped.decoder.get('layers.5.mlp.gate_up_proj.weight');
    expect(gu).toMatchObject({
      kind: 'file',
      byteOffset: hub.info('model.language_model.layers.5.shared_mlp.input_linear.weight').byteOffset,
    });
    expect(same(await refBytes(gu), await refBytes(ref.decoder.get('layers.5.mlp.gate_up_proj.weight')))).toBe(true);
    expect(mapped.report.parameters.find((p) => p.name === 'layers.5.mlp.down_proj.weight')).toMatchObject({
      fallback: true,
      sources: ['model.language_model.layers.5.shared_mlp.output_linear.weight'],
    });
    expect(
      same(
        await refBytes(mapped.vision.get('encoder.layers.2.self_attn.qkv_proj.bias')),
        await refBytes(ref.vision.get('encoder.layers.2.self_attn.qkv_proj.bias')),
      ),
    ).toBe(true);
    expect(mapped.report.unmapped).toEqual([]);
    await hub.close();
    await src.close();
  });
});
