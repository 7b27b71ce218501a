import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { FrameMask } from './attention-mask.js';
import { ernieVisionHeadDim, type VisionBlockConfig } from './config.js';

/** Per-patch rotary tables [1, Np, headDim/2] float32. */
export interface VisionRotary {
  cos: Value;
  sin: Value;
}

/**
 * vLLM: Ernie4_5_VisionAttention (and Qwen3_VisionAttention, the same math and names). qkv (with bias) on x [Np, D]; q, k, v are the
 * three D-wide column blocks, each head-major; 2D rotary (neox halves) on q
 * and k; attention restricted to each patch's frame; proj.
 */
export function visionAttention(g: Graph, w: Weights, config: VisionBlockConfig, x: Value, rotary: VisionRotary, frames: FrameMask): Value {
  const d = config.hiddenSize;
  const heads = config.numHeads;
  // [Np, 3D] -> [1, Np, 3D]: the attention ops take a batch axis.
  const qkv = g.unsqueeze(nn.linear(g, x, w, 'qkv', { in: d, out: 3 * d }), [0]);
  const [q0, k0, v] = g.split(qkv, [d, d, d], -1) as [Value, Value, Value];
  // HF apply_rotary_pos_emb_vision: q.float(), k.float() rotated with float32 tables, then back to their dtype.
  const rope = (t: Value) => g.inFloat32(() => g.rotaryEmbedding(t, rotary.cos, rotary.sin, { interleaved: false, numHeads: heads }));
  const [q, k] = [rope(q0), rope(k0)];
  const scale = 1 / Math.sqrt(ernieVisionHeadDim(config));
  const out =
    frames.op === 'Attention'
      ? g.attention(q, k, v, { qNumHeads: heads, kvNumHeads: heads, scale, mask: frames.mask }).out
      : g.multiHeadAttention(q, k, v, { numHeads: heads, scale, attentionBias: frames.bias }).out;
  return nn.linear(g, g.squeeze(out, [0]), w, 'proj', { in: d, out: d });
}
