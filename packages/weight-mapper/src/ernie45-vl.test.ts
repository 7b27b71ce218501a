/**
 * The ERNIE-4.5-VL table against the checkpoints transformers 5.17 wrote
 * (test-fixtures/ernie-tiny, float32, and ernie-tiny-bf16, bf16 with float32
 * routers and e_score_correction_bias). The components' parameter lists are
 * spelled out in test-utils (this package may not depend on the components;
 * @vlmkit/models tests the real, derived lists against the same fixtures):
 * docs/parameter-names.md with the tiny config's sizes substituted
 * (D 64, V 256, 4 q / 2 kv heads of 16, I 128, Et = Ev = 4, It 64, Iv 32,
 * 1 shared expert, layer 0 dense and 1..3 MoE; Dv 32, mlp 128, patch 14).
 * Values of every computed parameter are compared bit for bit with slices
 * of the source tensors read straight from the file.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Weights } from '@vlmkit/onnx-graph';
import { Checkpoint, type Tensor, writeSafetensors } from '@vlmkit/safetensors';
import { beforeAll, describe, expect, it } from 'vitest';
import { mapErnie45VL } from './ernie45-vl.js';
import { MappingError } from './errors.js';
import { refBytes, tempDir } from './test-utils/temp.js';
import { ernieTinyComponents, ernieTinyShapes as expectedShapes } from './test-utils/tiny-components.js';

const fixtures = fileURLToPath(new URL('../../../test-fixtures/', import.meta.url));

const bytesOf = (t: Tensor) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
const cat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => {
    out.set(p, at);
    return at + p.length;
  }, 0);
  return out;
};

/** Byte equality without vitest's element-by-element diff (slow on 10^5 elements); names the first differing byte. */
function expectBytes(actual: Uint8Array, expected: Uint8Array, label: string): void {
  expect(actual.length, label).toBe(expected.length);
  if (
    Buffer.from(actual.buffer, actual.byteOffset, actual.length).equals(Buffer.from(expected.buffer, expected.byteOffset, expected.length))
  )
    return;
  const at = actual.findIndex((b, i) => b !== expected[i]);
  expect.fail(`${label}: first difference at byte ${at}: ${actual[at]} vs ${expected[at]}`);
}

/** [rows, cols] of 4-byte elements -> [cols, rows], element by element (the routers are float32 in both fixtures). */
function transposeF32(t: Tensor): Uint8Array {
  const [r, c] = t.shape as [number, number];
  const src = t.data as Float32Array;
  const out = new Float32Array(r * c);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = src[i * c + j]!;
  return new Uint8Array(out.buffer);
}

for (const [fixture, weightDType] of [
  ['ernie-tiny', 'float32'],
  ['ernie-tiny-bf16', 'bfloat16'],
] as const) {
  describe(`mapErnie45VL on test-fixtures/${fixture}`, () => {
    let ckpt: Checkpoint;
    let mapped: Awaited<ReturnType<typeof mapErnie45VL>>;
    beforeAll(async () => {
      ckpt = await Checkpoint.open(join(fixtures, fixture));
      mapped = await mapErnie45VL(ckpt, ernieTinyComponents(), { strict: true });
      return () => ckpt.close();
    });

    it('gives exactly the names and shapes of docs/parameter-names.md, with the checkpoint dtypes', () => {
      const want = expectedShapes();
      for (const component of ['vision', 'resampler', 'decoder'] as const) {
        const w: Weights = mapped[component];
        expect(w.names()).toEqual(Object.keys(want[component]).sort());
        for (const [name, shape] of Object.entries(want[component])) {
          const ref = w.get(name);
          expect(ref.shape, `${component} ${name}`).toEqual(shape);
          // bf16 checkpoint: routers and e_score_correction_bias are kept float32 by HF.
          const f32 = /experts_gate\.weight$|e_score_correction_bias$/.test(name);
          expect(ref.dtype, `${component} ${name}`).toBe(f32 ? 'float32' : weightDType);
        }
      }
    });

    it('consumes every checkpoint tensor (none ignored, none unmapped, none missing)', () => {
      const r = mapped.report;
      expect(r.unmapped).toEqual([]);
      expect(r.ignored).toEqual([]);
      expect(r.missing).toEqual([]);
      expect(r.mismatched).toEqual([]);
      expect([...r.consumed].sort()).toEqual(ckpt.names().sort());
    });

    it('references unchanged tensors in place; a tied head is not mapped (the decoder reads embed_tokens)', () => {
      const embed = mapped.decoder.get('embed_tokens.weight');
      const info = ckpt.info('model.embed_tokens.weight');
      expect(embed).toMatchObject({ kind: 'file', path: info.file, byteOffset: info.byteOffset, byteLength: info.byteLength });
      expect(mapped.decoder.has('lm_head.weight')).toBe(false);
      expect(mapped.vision.get('blocks.1.attn.qkv.weight')).toMatchObject({
        kind: 'file',
        byteOffset: ckpt.info('model.vision_model.blocks.1.attn.qkv.weight').byteOffset,
      });
      expect(mapped.resampler.get('spatial_norm.weight')).toMatchObject({
        kind: 'file',
        byteOffset: ckpt.info('model.resampler_model.spatial_linear.3.weight').byteOffset,
      });
      expect(
        mapped.report.parameters
          .filter((p) => p.transformed)
          .map((p) => p.name)
          .sort(),
      ).toEqual(
        // Per-expert tensors (`text_experts.3.up_proj.weight`) are the checkpoint's own: referenced in place.
        Object.keys(expectedShapes().decoder)
          .filter((n) => /qkv_proj|gate_up_proj|_experts/.test(n) && !n.endsWith('down_proj.weight') && !/_experts\.\d+\./.test(n))
          .sort(),
      );
    });

    it('fused, stacked, transposed and split tensors equal their source slices bit for bit', async () => {
      const read = async (n: string) => bytesOf(await ckpt.read(n));
      const d = mapped.decoder;
      for (const i of [0, 1, 2, 3]) {
        const L = `model.layers.${i}.`;
        expectBytes(
          await refBytes(d.get(`layers.${i}.self_attn.qkv_proj.weight`)),
          cat(
            await read(`${L}self_attn.q_proj.weight`),
            await read(`${L}self_attn.k_proj.weight`),
            await read(`${L}self_attn.v_proj.weight`),
          ),
          `layers.${i} qkv_proj`,
        );
        if (i === 0) {
          expectBytes(
            await refBytes(d.get('layers.0.mlp.gate_up_proj.weight')),
            cat(await read(`${L}mlp.gate_proj.weight`), await read(`${L}mlp.up_proj.weight`)),
            'layers.0 gate_up_proj',
          );
          continue;
        }
        const M = `layers.${i}.mlp.`;
        for (const [key, first, gate, row] of [
          ['text', 0, 'gate.weight', 0],
          ['vision', 4, 'gate.weight_1', 1],
        ] as const) {
          const experts = [0, 1, 2, 3].map((j) => `${L}mlp.experts.${first + j}.`);
          const w13 = await Promise.all(
            experts.map(async (e) => cat(await read(`${e}gate_proj.weight`), await read(`${e}up_proj.weight`))),
          );
          expectBytes(await refBytes(d.get(`${M}${key}_experts.w13_weight`)), cat(...w13), `${M}${key} w13`);
          const w2 = await Promise.all(experts.map((e) => read(`${e}down_proj.weight`)));
          expectBytes(await refBytes(d.get(`${M}${key}_experts.w2_weight`)), cat(...w2), `${M}${key} w2`);
          expectBytes(
            await refBytes(d.get(`${M}${key}_experts_gate.weight`)),
            transposeF32(await ckpt.read(`${L}mlp.${gate}`)),
            `${M}${key}_experts_gate`,
          );
          const bias = await read(`${L}mlp.moe_statics.e_score_correction_bias`);
          expectBytes(
            await refBytes(d.get(`${M}${key}_experts.e_score_correction_bias`)),
            bias.subarray(row * 16, row * 16 + 16),
            `${M}${key} e_score_correction_bias`,
          );
        }
        expectBytes(
          await refBytes(d.get(`${M}shared_experts.gate_up_proj.weight`)),
          cat(await read(`${L}mlp.shared_experts.gate_proj.weight`), await read(`${L}mlp.shared_experts.up_proj.weight`)),
          `${M}shared_experts.gate_up_proj`,
        );
      }
    });
  });
}

describe('mapErnie45VL: bf16 stays bf16', () => {
  it('stacked bf16 experts are the checkpoint Uint16 bits, not a float conversion', async () => {
    const ckpt = await Checkpoint.open(join(fixtures, 'ernie-tiny-bf16'));
    const { decoder } = await mapErnie45VL(ckpt, ernieTinyComponents());
    const ref = decoder.get('layers.2.mlp.vision_experts.w2_weight');
    expect(ref.kind === 'lazy' && ref.dtype).toBe('bfloat16');
    const data = ref.kind === 'lazy' ? await ref.load() : undefined;
    expect(data).toBeInstanceOf(Uint16Array);
    const expert5 = (await ckpt.read('model.layers.2.mlp.experts.5.down_proj.weight')).data as Uint16Array; // vision expert 1
    expect(expert5).toBeInstanceOf(Uint16Array);
    expect((data as Uint16Array).subarray(64 * 32, 2 * 64 * 32)).toEqual(expert5);
    await ckpt.close();
  });
});

describe('mapErnie45VL errors and other layouts', () => {
  let dir: string;
  let tensors: Record<string, Tensor>;
  beforeAll(async () => {
    dir = await tempDir();
    const src = await Checkpoint.open(join(fixtures, 'ernie-tiny'));
    tensors = Object.fromEntries(await Promise.all(src.names().map(async (n) => [n, await src.read(n)] as const)));
    await src.close();
  });

  async function checkpointOf(name: string, edit: (t: Record<string, Tensor>) => Record<string, Tensor>): Promise<Checkpoint> {
    const path = join(dir, `${name}.safetensors`);
    await writeSafetensors(path, edit({ ...tensors }));
    return Checkpoint.open(path);
  }

  it('a missing expert is MISSING_TENSOR with the 3 nearest checkpoint names', async () => {
    const ckpt = await checkpointOf('missing', (t) => {
      delete t['model.layers.2.mlp.experts.6.up_proj.weight'];
      return t;
    });
    const err = await mapErnie45VL(ckpt, ernieTinyComponents()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MappingError);
    const e = err as MappingError;
    expect(e.code).toBe('MISSING_TENSOR');
    expect(e.message).toContain(
      "decoder parameter 'layers.2.mlp.vision_experts.w13_weight' needs 'model.layers.2.mlp.experts.6.up_proj.weight'",
    );
    // The stacked tensor and the expert's own (hub expert 6 = vision expert 2) both need it.
    expect(e.report!.missing.map((m) => m.name).sort()).toEqual([
      'layers.2.mlp.vision_experts.2.up_proj.weight',
      'layers.2.mlp.vision_experts.w13_weight',
    ]);
    expect(e.report!.missing[0]!.nearest).toEqual([
      'model.layers.1.mlp.experts.6.up_proj.weight',
      'model.layers.2.mlp.experts.0.up_proj.weight',
      'model.layers.2.mlp.experts.1.up_proj.weight',
    ]);
    expect(e.message).toContain("'model.layers.1.mlp.experts.6.up_proj.weight' (missing.safetensors)");
    await ckpt.close();
  });

  it('a shape that disagrees with config.json is SHAPE_MISMATCH naming the file and tensor', async () => {
    const ckpt = await Checkpoint.open(join(fixtures, 'ernie-tiny'));
    // The lists of a decoder built from a config with intermediate_size 96: layer 0's dense MLP.
    const shapes = expectedShapes();
    shapes.decoder['layers.0.mlp.gate_up_proj.weight'] = [192, 64];
    shapes.decoder['layers.0.mlp.down_proj.weight'] = [64, 96];
    const err = (await mapErnie45VL(ckpt, ernieTinyComponents(shapes)).catch((e: unknown) => e)) as MappingError;
    expect(err).toBeInstanceOf(MappingError);
    expect(err.code).toBe('SHAPE_MISMATCH');
    expect(err.message).toContain(
      "decoder parameter 'layers.0.mlp.gate_up_proj.weight': expected [192, 64] (from the config), found concat of 'model.layers.0.mlp.gate_proj.weight' (model.safetensors)",
    );
    expect(err.message).toContain(join(fixtures, 'ernie-tiny', 'model.safetensors'));
    expect(err.report!.mismatched.map((m) => m.name)).toEqual(['layers.0.mlp.gate_up_proj.weight', 'layers.0.mlp.down_proj.weight']);
    await ckpt.close();
  });

  it("reads Baidu's layout and config: top-level vision_model., mtp heads and a stored tied lm_head ignored", async () => {
    const ckpt = await checkpointOf('baidu', (t) => {
      const out: Record<string, Tensor> = {};
      for (const [n, v] of Object.entries(t)) out[n.replace(/^model\.vision_model\./, 'vision_model.')] = v;
      out['model.mtp_block.0.input_layernorm.weight'] = t['model.norm.weight']!;
      out['model.mtp_linear_proj.0.weight'] = t['model.layers.0.self_attn.o_proj.weight']!;
      out['lm_head.weight'] = t['model.embed_tokens.weight']!;
      return out;
    });
    const mapped = await mapErnie45VL(ckpt, ernieTinyComponents(), { strict: true });
    expect([...mapped.report.ignored].sort()).toEqual([
      'lm_head.weight',
      'model.mtp_block.0.input_layernorm.weight',
      'model.mtp_linear_proj.0.weight',
    ]);
    expect(mapped.report.unmapped).toEqual([]);
    expect(mapped.vision.names()).toEqual(Object.keys(expectedShapes().vision).sort());
    expect(mapped.decoder.has('lm_head.weight')).toBe(false);
    await ckpt.close();
  });

  it('an untied config takes lm_head.weight and requires it', async () => {
    // An untied decoder lists lm_head.weight.
    const shapes = expectedShapes();
    shapes.decoder['lm_head.weight'] = [256, 64];
    const untied = ernieTinyComponents(shapes, false);
    const tiny = await Checkpoint.open(join(fixtures, 'ernie-tiny'));
    const err = (await mapErnie45VL(tiny, untied).catch((e: unknown) => e)) as MappingError;
    expect(err.code).toBe('MISSING_TENSOR');
    expect(err.message).toContain("decoder parameter 'lm_head.weight' needs 'lm_head.weight'");
    await tiny.close();
    const ckpt = await checkpointOf('untied', (t) => ({ ...t, 'lm_head.weight': t['model.embed_tokens.weight']! }));
    const { decoder } = await mapErnie45VL(ckpt, untied, { strict: true });
    expect(decoder.get('lm_head.weight')).toMatchObject({ kind: 'file', byteOffset: ckpt.info('lm_head.weight').byteOffset });
    await ckpt.close();
  });
});
