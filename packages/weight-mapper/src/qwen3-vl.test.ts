/**
 * The Qwen3-VL table against test-fixtures/moe-decoder/qwen3-vl-text-moe (HF 5.17 names, written by
 * tools/moe-decoder/qwen3_vl_text.py: D 32, 3 layers (sparse, dense, sparse), 4 q / 2 kv heads of 16, dense
 * mlp 40, 4 experts of 24, vocab 64, untied). The decoder's parameter list is spelled out for that config
 * (@vlmkit/moe-decoder tests the derived list and the numbers). Original Qwen checkpoints store the fused
 * experts transposed: the same tensors written so must map to the same bytes.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checkpoint, type Tensor, writeSafetensors } from '@vlmkit/safetensors';
import { beforeAll, describe, expect, it } from 'vitest';
import { mapQwen3VL } from './qwen3-vl.js';
import { refBytes, tempDir } from './test-utils/temp.js';

const fixture = fileURLToPath(new URL('../../../test-fixtures/moe-decoder/qwen3-vl-text-moe/model.safetensors', import.meta.url));
const [D, H, KV, hd, I, E, IE, V] = [32, 4, 2, 16, 40, 4, 24, 64];
const config = { tieWordEmbeddings: false, hiddenSize: D, moe: { numExperts: E, intermediateSize: IE } };

function parameters(): { name: string; shape: number[] }[] {
  const p: { name: string; shape: number[] }[] = [{ name: 'embed_tokens.weight', shape: [V, D] }];
  for (const l of [0, 1, 2]) {
    const L = `layers.${l}.`;
    p.push(
      { name: `${L}input_layernorm.weight`, shape: [D] },
      { name: `${L}self_attn.qkv_proj.weight`, shape: [(H + 2 * KV) * hd, D] },
      { name: `${L}self_attn.q_norm.weight`, shape: [hd] },
      { name: `${L}self_attn.k_norm.weight`, shape: [hd] },
      { name: `${L}self_attn.o_proj.weight`, shape: [D, H * hd] },
      { name: `${L}post_attention_layernorm.weight`, shape: [D] },
    );
    if (l === 1) {
      p.push({ name: `${L}mlp.gate_up_proj.weight`, shape: [2 * I, D] }, { name: `${L}mlp.down_proj.weight`, shape: [D, I] });
      continue;
    }
    p.push({ name: `${L}mlp.gate.weight`, shape: [E, D] });
    for (let e = 0; e < E; e++) {
      p.push(
        { name: `${L}mlp.experts.${e}.gate_proj.weight`, shape: [IE, D] },
        { name: `${L}mlp.experts.${e}.up_proj.weight`, shape: [IE, D] },
        { name: `${L}mlp.experts.${e}.down_proj.weight`, shape: [D, IE] },
      );
    }
  }
  p.push({ name: 'norm.weight', shape: [D] }, { name: 'lm_head.weight', shape: [V, D] });
  return p;
}
const components = () => ({ vision: { parameters: [] }, decoder: { parameters: parameters(), config } });

/** [A, B, C] -> [A, C, B], raw float32 elements. */
function swapLast(t: Tensor): Tensor {
  const [a, b, c] = t.shape as [number, number, number];
  const src = t.data as Float32Array;
  const out = new Float32Array(src.length);
  for (let i = 0; i < a; i++) for (let j = 0; j < b; j++) for (let k = 0; k < c; k++) out[(i * c + k) * b + j] = src[(i * b + j) * c + k]!;
  return { ...t, shape: [a, c, b], data: out };
}

describe('mapQwen3VL on an HF 5.17 Qwen3-VL-MoE checkpoint', () => {
  let ckpt: Checkpoint;
  let mapped: Awaited<ReturnType<typeof mapQwen3VL>>;
  beforeAll(async () => {
    ckpt = await Checkpoint.open(fixture);
    mapped = await mapQwen3VL(ckpt, components(), { strict: true });
    return () => ckpt.close();
  });

  it('uses every tensor; each expert is a range of the fused tensors, referenced in place', async () => {
    expect(mapped.report.unmapped).toEqual([]);
    expect(mapped.report.consumed.length).toBe(ckpt.names().length);
    const L = 'model.language_model.layers.2.mlp.experts.';
    const gateUp = ckpt.info(`${L}gate_up_proj`);
    const down = ckpt.info(`${L}down_proj`);
    const rowBytes = (n: number) => n * D * 4;
    for (let e = 0; e < E; e++) {
      const at = (p: string) => mapped.decoder.get(`layers.2.mlp.experts.${e}.${p}_proj.weight`);
      expect(at('gate')).toMatchObject({ kind: 'file', byteOffset: gateUp.byteOffset + rowBytes(2 * IE * e), byteLength: rowBytes(IE) });
      expect(at('up')).toMatchObject({ kind: 'file', byteOffset: gateUp.byteOffset + rowBytes(2 * IE * e + IE), byteLength: rowBytes(IE) });
      expect(at('down')).toMatchObject({ kind: 'file', byteOffset: down.byteOffset + rowBytes(IE * e), byteLength: rowBytes(IE) });
    }
  });

  it('maps the transposed (original Qwen) expert layout to the same bytes, as HF decides by shape', async () => {
    const dir = await tempDir();
    const tensors: Record<string, Tensor> = {};
    for (const n of ckpt.names()) {
      const t = await ckpt.read(n);
      tensors[n] = /mlp\.experts\.(gate_up|down)_proj$/.test(n) ? swapLast(t) : t;
    }
    await writeSafetensors(join(dir, 'model.safetensors'), tensors);
    const other = await Checkpoint.open(join(dir, 'model.safetensors'));
    try {
      const theirs = await mapQwen3VL(other, components(), { strict: true });
      for (const { name } of parameters()) {
        const [a, b] = [await refBytes(mapped.decoder.get(name)), await refBytes(theirs.decoder.get(name))];
        expect(Buffer.from(b).equals(Buffer.from(a)), name).toBe(true);
      }
    } finally {
      await other.close();
    }
  });
});

describe("mapQwen3VL's vision names", () => {
  it("reads the blocks' MLP (ERNIE's module, fc1/fc2) from HF's linear_fc1/2, and the mergers' linear_fc1 as it is", async () => {
    const dir = await tempDir();
    const t = (v: number): Tensor => ({ dtype: 'F32', shape: [2], data: new Float32Array([v, v + 1]) });
    const names = [
      'blocks.0.mlp.linear_fc1.weight',
      'blocks.0.mlp.linear_fc2.bias',
      'merger.linear_fc1.weight',
      'deepstack_merger_list.0.linear_fc2.bias',
    ];
    await writeSafetensors(join(dir, 'model.safetensors'), Object.fromEntries(names.map((n, i) => [`model.visual.${n}`, t(10 * i)])));
    const ckpt = await Checkpoint.open(join(dir, 'model.safetensors'));
    try {
      const ours = [
        'blocks.0.mlp.fc1.weight',
        'blocks.0.mlp.fc2.bias',
        'merger.linear_fc1.weight',
        'deepstack_merger_list.0.linear_fc2.bias',
      ];
      const vision = { parameters: ours.map((name) => ({ name, shape: [2] })) };
      const mapped = await mapQwen3VL(ckpt, { vision, decoder: { parameters: [], config } }, { strict: true });
      expect(mapped.report.unmapped).toEqual([]);
      for (const [i, name] of ours.entries()) {
        expect(new Float32Array((await refBytes(mapped.vision.get(name))).slice().buffer), name).toEqual(
          new Float32Array([10 * i, 10 * i + 1]),
        );
      }
    } finally {
      await ckpt.close();
    }
  });
});
