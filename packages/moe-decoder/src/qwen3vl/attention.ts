import type { Graph, Weights } from '@vlmkit/onnx-graph';
import { type SelfAttentionInputs, type SelfAttentionOutputs, selfAttention } from '../attention.js';
import type { Qwen3VlTextConfig } from './config.js';

/**
 * vLLM: Qwen3Attention (HF: Qwen3VLTextAttention). The shared `selfAttention` with Qwen3's choices: biases
 * with `attention_bias`, per-head RMSNorm of q and k (`q_norm`, `k_norm`) before the rotary, softmax scale
 * head_dim^-0.5, M-RoPE in the GPT-NeoX layout (rotate halves) with tables from `qwen3VlRotaryTables`.
 * `w` is relative to the module (`layers.3.self_attn`).
 */
export function qwen3VlAttention(g: Graph, w: Weights, config: Qwen3VlTextConfig, inputs: SelfAttentionInputs): SelfAttentionOutputs {
  // HF Qwen3VLTextRotaryEmbedding returns `cos.to(x.dtype)`: the rotation runs in the compute dtype.
  const choices = {
    qkvBias: config.attentionBias,
    oProjBias: config.attentionBias,
    scaling: config.headDim ** -0.5,
    isNeoxStyle: true,
    rotaryInFloat32: false,
    qkNormEps: config.rmsNormEps,
  };
  return selfAttention(g, w, { ...config, ...choices }, inputs);
}
