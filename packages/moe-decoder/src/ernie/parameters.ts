import type { ParameterSpec } from '../types.js';
import type { ErnieTextConfig } from './config.js';

/**
 * The parameters `buildErnieTextDecoder` reads, under the names of
 * docs/parameter-names.md (vLLM's module tree with packed qkv_proj /
 * gate_up_proj and stacked expert weights). `lm_head.weight` is listed as
 * the mapper supplies it; with tied embeddings the decoder reads
 * `embed_tokens.weight` for the head instead (stored once).
 */
export function ernieTextExpectedParameters(config: ErnieTextConfig): ParameterSpec[] {
  const { hiddenSize: D, headDim: hd, numAttentionHeads: hq, numKeyValueHeads: hkv, vocabSize: V } = config;
  const out: ParameterSpec[] = [{ name: 'embed_tokens.weight', shape: [V, D] }];
  config.mlpLayerTypes.forEach((type, i) => {
    const p = `layers.${i}`;
    out.push(
      { name: `${p}.input_layernorm.weight`, shape: [D] },
      { name: `${p}.self_attn.qkv_proj.weight`, shape: [(hq + 2 * hkv) * hd, D] },
      { name: `${p}.self_attn.o_proj.weight`, shape: [D, hq * hd] },
      { name: `${p}.post_attention_layernorm.weight`, shape: [D] },
    );
    if (type === 'dense') {
      const I = config.intermediateSize;
      out.push({ name: `${p}.mlp.gate_up_proj.weight`, shape: [2 * I, D] }, { name: `${p}.mlp.down_proj.weight`, shape: [D, I] });
      return;
    }
    const { numExperts, intermediateSize, numSharedExperts } = config.moe;
    (['text', 'vision'] as const).forEach((m, k) => {
      const [E, I] = [numExperts[k]!, intermediateSize[k]!];
      out.push(
        { name: `${p}.mlp.${m}_experts_gate.weight`, shape: [E, D] },
        { name: `${p}.mlp.${m}_experts.e_score_correction_bias`, shape: [E] },
        { name: `${p}.mlp.${m}_experts.w13_weight`, shape: [E, 2 * I, D] },
        { name: `${p}.mlp.${m}_experts.w2_weight`, shape: [E, D, I] },
      );
      // The same experts one by one, as checkpoints store them: the sparse path's Gemm operands.
      for (let e = 0; e < E; e++) {
        out.push(
          { name: `${p}.mlp.${m}_experts.${e}.gate_proj.weight`, shape: [I, D] },
          { name: `${p}.mlp.${m}_experts.${e}.up_proj.weight`, shape: [I, D] },
          { name: `${p}.mlp.${m}_experts.${e}.down_proj.weight`, shape: [D, I] },
        );
      }
    });
    if (numSharedExperts > 0) {
      const Is = intermediateSize[0] * numSharedExperts;
      out.push(
        { name: `${p}.mlp.shared_experts.gate_up_proj.weight`, shape: [2 * Is, D] },
        { name: `${p}.mlp.shared_experts.down_proj.weight`, shape: [D, Is] },
      );
    }
  });
  out.push({ name: 'norm.weight', shape: [D] });
  out.push({ name: 'lm_head.weight', shape: [V, D] });
  return out;
}
