import type { Graph, Weights } from '@vlmkit/onnx-graph';
import { type SelfAttentionInputs, type SelfAttentionOutputs, selfAttention } from '../attention.js';
import type { ErnieTextConfig } from './config.js';

/**
 * vLLM: Ernie4_5_VLMoeAttention. The shared `selfAttention` with ERNIE's
 * choices: no biases (the checkpoints' `use_bias` is false), softmax scale
 * head_dim^-0.5, and the 3D rotary in the GPT-J layout (`is_neox_style=False`),
 * its tables computed from the 3D positions outside the graph
 * (`ernieRotaryTables`). `w` is relative to the module (`layers.3.self_attn`).
 */
export function ernieAttention(g: Graph, w: Weights, config: ErnieTextConfig, inputs: SelfAttentionInputs): SelfAttentionOutputs {
  // HF apply_rotary_pos_emb: `q.float() * cos + rotate_half_text(q).float() * sin`, then back to q's dtype.
  const choices = { qkvBias: false, oProjBias: false, scaling: config.headDim ** -0.5, isNeoxStyle: false, rotaryInFloat32: true };
  return selfAttention(g, w, { ...config, ...choices }, inputs);
}
