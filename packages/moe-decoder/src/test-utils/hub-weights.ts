import { type TensorRef, type TypedArray, Weights, lazyTensor, tensorFromSafetensors } from '@vlmkit/onnx-graph';
import type { Checkpoint } from '@vlmkit/safetensors';
import type { ErnieTextConfig } from '../ernie-config.js';

/**
 * Test-only stand-in for @vlmkit/weight-mapper until it maps ERNIE: the hub
 * layout (`model.layers.N.mlp.experts.j.*`, transposed gates, moe_statics)
 * to the decoder's names (docs/parameter-names.md). Tensors used unchanged
 * are referenced in place; packed/stacked/transposed ones are lazy.
 */
export function ernieHubWeights(ckpt: Checkpoint, config: ErnieTextConfig): Weights {
  const table = new Map<string, TensorRef>();
  const ref = (name: string) => tensorFromSafetensors(ckpt.info(name));
  const dtypeOf = (name: string) => ckpt.info(name).dtype;
  const read = async (name: string) => (await ckpt.read(name)).data as unknown as TypedArray;
  const cat = (names: string[], shape: number[]) =>
    lazyTensor(dtypeOf(names[0]!), shape, async () => concatArrays(await Promise.all(names.map(read))));
  const shapeOf = (name: string) => ckpt.info(name).shape;

  const D = config.hiddenSize;
  table.set('embed_tokens.weight', ref('model.embed_tokens.weight'));
  table.set('lm_head.weight', ckpt.has('lm_head.weight') ? ref('lm_head.weight') : table.get('embed_tokens.weight')!);
  table.set('norm.weight', ref('model.norm.weight'));
  config.mlpLayerTypes.forEach((type, i) => {
    const src = `model.layers.${i}`;
    const dst = `layers.${i}`;
    table.set(`${dst}.input_layernorm.weight`, ref(`${src}.input_layernorm.weight`));
    table.set(`${dst}.post_attention_layernorm.weight`, ref(`${src}.post_attention_layernorm.weight`));
    const qkv = ['q', 'k', 'v'].map((p) => `${src}.self_attn.${p}_proj.weight`);
    table.set(`${dst}.self_attn.qkv_proj.weight`, cat(qkv, [qkv.reduce((a, n) => a + shapeOf(n)[0]!, 0), D]));
    table.set(`${dst}.self_attn.o_proj.weight`, ref(`${src}.self_attn.o_proj.weight`));
    const gateUp = (m: string) => {
      const names = [`${m}.gate_proj.weight`, `${m}.up_proj.weight`];
      return cat(names, [2 * shapeOf(names[0]!)[0]!, D]);
    };
    if (type === 'dense') {
      table.set(`${dst}.mlp.gate_up_proj.weight`, gateUp(`${src}.mlp`));
      table.set(`${dst}.mlp.down_proj.weight`, ref(`${src}.mlp.down_proj.weight`));
      return;
    }
    const [Et, Ev] = config.moe.numExperts;
    const statics = `${src}.mlp.moe_statics.e_score_correction_bias`;
    (['text', 'vision'] as const).forEach((m, k) => {
      const E = k === 0 ? Et : Ev;
      const I = config.moe.intermediateSize[k]!;
      const experts = Array.from({ length: E }, (_, e) => `${src}.mlp.experts.${k === 0 ? e : Et + e}`);
      const gateName = k === 0 ? `${src}.mlp.gate.weight` : `${src}.mlp.gate.weight_1`;
      table.set(`${dst}.mlp.${m}_experts_gate.weight`, lazyTensor(dtypeOf(gateName), [E, D], async () => transpose2d(await read(gateName), D, E)));
      table.set(`${dst}.mlp.${m}_experts.e_score_correction_bias`, lazyTensor(dtypeOf(statics), [E], async () => (await read(statics)).slice(k * Et, k * Et + E)));
      table.set(`${dst}.mlp.${m}_experts.w13_weight`, cat(experts.flatMap((e) => [`${e}.gate_proj.weight`, `${e}.up_proj.weight`]), [E, 2 * I, D]));
      table.set(`${dst}.mlp.${m}_experts.w2_weight`, cat(experts.map((e) => `${e}.down_proj.weight`), [E, D, I]));
    });
    if (config.moe.numSharedExperts > 0) {
      table.set(`${dst}.mlp.shared_experts.gate_up_proj.weight`, gateUp(`${src}.mlp.shared_experts`));
      table.set(`${dst}.mlp.shared_experts.down_proj.weight`, ref(`${src}.mlp.shared_experts.down_proj.weight`));
    }
  });
  return Weights.from(table);
}

function concatArrays(parts: TypedArray[]): TypedArray {
  const n = parts.reduce((a, p) => a + p.length, 0);
  const Ctor = parts[0]!.constructor as new (n: number) => TypedArray;
  const out = new Ctor(n);
  let o = 0;
  for (const p of parts) {
    (out as unknown as { set(a: ArrayLike<unknown>, o: number): void }).set(p as ArrayLike<unknown>, o);
    o += p.length;
  }
  return out;
}

function transpose2d(a: TypedArray, rows: number, cols: number): TypedArray {
  const Ctor = a.constructor as new (n: number) => TypedArray;
  const out = new Ctor(a.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) (out as unknown as number[])[c * rows + r] = (a as unknown as number[])[r * cols + c]!;
  return out;
}
