import type { Graph, Weights } from '@vlmkit/onnx-graph';
import { type SelfAttentionInputs, type SelfAttentionOutputs, selfAttention } from '../attention.js';
import type { GraniteTextConfig } from './config.js';

/**
 * vLLM: GraniteAttention. The shared `selfAttention` with Granite's choices:
 * biases on qkv_proj and o_proj with `attention_bias`, softmax scale
 * `attention_multiplier` itself (not head_dim^-0.5), 1D RoPE in the GPT-NeoX
 * layout (rotate halves; vLLM's `rope_is_neox_style` default), tables from
 * `graniteRotaryTables`. `w` is relative to the module (`layers.3.self_attn`).
 */
export function graniteAttention(g: Graph, w: Weights, config: GraniteTextConfig, inputs: SelfAttentionInputs): SelfAttentionOutputs {
  const { attentionBias, attentionMultiplier } = config;
  // HF GraniteRotaryEmbedding returns `cos.to(x.dtype)`: the rotation runs in the compute dtype.
  const choices = {
    qkvBias: attentionBias,
    oProjBias: attentionBias,
    scaling: attentionMultiplier,
    isNeoxStyle: true,
    rotaryInFloat32: false,
  };
  return selfAttention(g, w, { ...config, ...choices }, inputs);
}
