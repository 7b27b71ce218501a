/**
 * The Granite 4 Vision table against test-fixtures/granite-tiny (written by
 * transformers 5.17). Expected names and shapes spelled out for the tiny
 * config: SigLIP D 32, mlp 64, patch 8, image 64 (64 positions), 4 layers;
 * 4 layerwise + 4 spatial window Q-Former projectors (downsample "2/4":
 * 2x2 queries, 4x4 window positions; Q-Former hidden 32, mlp 64, 1 layer
 * with cross-attention); decoder D 64, 8 layers, 4 q / 2 kv heads of 16,
 * mlp 128, vocab 256, tied embeddings.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checkpoint, type Tensor, writeSafetensors } from '@vlmkit/safetensors';
import { beforeAll, describe, expect, it } from 'vitest';
import type { MappingError } from './errors.js';
import { mapGranite4Vision } from './granite4-vision.js';
import { granite4VisionConfigFromHf } from './granite4-vision-config.js';
import { refBytes, tempDir } from './test-utils/temp.js';

const fixture = fileURLToPath(new URL('../../../test-fixtures/granite-tiny/', import.meta.url));
const config = JSON.parse(readFileSync(join(fixture, 'config.json'), 'utf8')) as Record<string, unknown>;

function expectedShapes(): Record<'vision' | 'projectors' | 'decoder', Record<string, number[]>> {
  const vision: Record<string, number[]> = {
    'embeddings.patch_embedding.weight': [32, 3, 8, 8],
    'embeddings.patch_embedding.bias': [32],
    'embeddings.position_embedding.weight': [64, 32],
  };
  for (const l of [0, 1, 2, 3]) {
    const L = `encoder.layers.${l}.`;
    Object.assign(vision, {
      [`${L}layer_norm1.weight`]: [32],
      [`${L}layer_norm1.bias`]: [32],
      [`${L}layer_norm2.weight`]: [32],
      [`${L}layer_norm2.bias`]: [32],
      [`${L}self_attn.qkv_proj.weight`]: [96, 32],
      [`${L}self_attn.qkv_proj.bias`]: [96],
      [`${L}self_attn.out_proj.weight`]: [32, 32],
      [`${L}self_attn.out_proj.bias`]: [32],
      [`${L}mlp.fc1.weight`]: [64, 32],
      [`${L}mlp.fc1.bias`]: [64],
      [`${L}mlp.fc2.weight`]: [32, 64],
      [`${L}mlp.fc2.bias`]: [32],
    });
  }
  const projectors: Record<string, number[]> = { image_newline: [64] };
  for (const P of [0, 1, 2, 3].flatMap((k) => [`layerwise_projectors.${k}.`, `spatial_projectors.${k}.`])) {
    Object.assign(projectors, {
      [`${P}query`]: [1, 4, 32],
      [`${P}image_positions`]: [1, 16, 32],
      [`${P}norm.weight`]: [32],
      [`${P}norm.bias`]: [32],
      [`${P}out_linear.weight`]: [64, 32],
      [`${P}out_linear.bias`]: [64],
      [`${P}qformer.layernorm.weight`]: [32],
      [`${P}qformer.layernorm.bias`]: [32],
    });
    const L = `${P}qformer.encoder.layer.0.`;
    for (const A of ['attention', 'crossattention']) {
      for (const x of ['attention.query', 'attention.key', 'attention.value', 'output.dense'])
        Object.assign(projectors, { [`${L}${A}.${x}.weight`]: [32, 32], [`${L}${A}.${x}.bias`]: [32] });
      Object.assign(projectors, { [`${L}${A}.output.LayerNorm.weight`]: [32], [`${L}${A}.output.LayerNorm.bias`]: [32] });
    }
    Object.assign(projectors, {
      [`${L}intermediate_query.dense.weight`]: [64, 32],
      [`${L}intermediate_query.dense.bias`]: [64],
      [`${L}output_query.dense.weight`]: [32, 64],
      [`${L}output_query.dense.bias`]: [32],
      [`${L}output_query.LayerNorm.weight`]: [32],
      [`${L}output_query.LayerNorm.bias`]: [32],
    });
  }
  const decoder: Record<string, number[]> = { 'embed_tokens.weight': [256, 64], 'norm.weight': [64], 'lm_head.weight': [256, 64] };
  for (const l of [0, 1, 2, 3, 4, 5, 6, 7]) {
    const L = `layers.${l}.`;
    Object.assign(decoder, {
      [`${L}input_layernorm.weight`]: [64],
      [`${L}post_attention_layernorm.weight`]: [64],
      [`${L}self_attn.qkv_proj.weight`]: [(4 + 2 * 2) * 16, 64],
      [`${L}self_attn.o_proj.weight`]: [64, 64],
      [`${L}mlp.gate_up_proj.weight`]: [256, 64],
      [`${L}mlp.down_proj.weight`]: [64, 128],
    });
  }
  return { vision, projectors, decoder };
}

const bytesOf = (t: Tensor) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
const cat = (...parts: Uint8Array[]) => Buffer.concat(parts);
const same = (a: Uint8Array, b: Uint8Array) =>
  Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));

describe('mapGranite4Vision on test-fixtures/granite-tiny', () => {
  let ckpt: Checkpoint;
  let mapped: Awaited<ReturnType<typeof mapGranite4Vision>>;
  beforeAll(async () => {
    ckpt = await Checkpoint.open(fixture);
    mapped = await mapGranite4Vision(ckpt, config, { strict: true });
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
    expect(mapped.decoder.get('lm_head.weight')).toEqual(mapped.decoder.get('embed_tokens.weight'));
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
    const mapped = await mapGranite4Vision(hub, config, { strict: true });
    const ref = await mapGranite4Vision(src, config);
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

describe('granite4VisionConfigFromHf', () => {
  it('reads the fixture config', () => {
    const c = granite4VisionConfigFromHf(config);
    expect(c).toMatchObject({ querySide: 2, windowSide: 4, layerwiseProjectors: 4, spatialProjectors: 4, imageNewline: true });
    expect(c.text).toMatchObject({ layers: 8, hidden: 64, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128, tieWordEmbeddings: true });
  });

  it('refuses mamba layers and a malformed downsample_rate with CONFIG_INVALID', () => {
    const text = config['text_config'] as object;
    const mamba = { ...config, text_config: { ...text, model_type: 'granitemoehybrid', layer_types: ['mamba', 'attention'] } };
    expect(() => granite4VisionConfigFromHf(mamba)).toThrow(/non-attention \(mamba\) layers/);
    const err = (() => {
      try {
        granite4VisionConfigFromHf({ ...config, downsample_rate: 0.5 });
      } catch (e) {
        return e as MappingError;
      }
      return undefined;
    })();
    expect(err?.code).toBe('CONFIG_INVALID');
    expect(err?.message).toContain('downsample_rate');
  });

  it("granitemoehybrid's shared_intermediate_size sizes the MLP", () => {
    const text = {
      ...(config['text_config'] as object),
      model_type: 'granitemoehybrid',
      shared_intermediate_size: 96,
      layer_types: Array(8).fill('attention'),
    };
    expect(granite4VisionConfigFromHf({ ...config, text_config: text }).text.intermediate).toBe(96);
  });
});
