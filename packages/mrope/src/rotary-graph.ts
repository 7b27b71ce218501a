import { type Graph, GraphError, type Value } from '@vlmkit/onnx-graph';
import type { HeadLayout, RotaryStyle } from './rotate.js';

/**
 * Rotary subgraph builders on @vlmkit/onnx-graph. They take the caller's
 * Values and return Values; they add nodes to the caller's graph and assume
 * nothing else about it. The math is done in float32 (HF casts q/k to float
 * for both the ERNIE text and the vision rotation) and cast back to x's dtype;
 * vLLM computes the text rotation in the activation dtype, which differs only
 * for bf16/fp16 activations.
 */
export interface TextRotaryOptions {
  /** x is [B, S, H, hd] ('BSHD', default) or [B, H, S, hd] ('BHSD'). */
  layout?: HeadLayout;
  /**
   * 'primitive' (default): Mul/Add/Split/Concat, runs on every EP.
   * 'RotaryEmbedding': the ONNX opset-23 op (float32 only here).
   */
  impl?: 'primitive' | 'RotaryEmbedding';
}

function staticHeadDim(g: Graph, x: Value, fn: string): number {
  const hd = x.dim(-1);
  if (typeof hd !== 'number' || hd % 2 !== 0) {
    throw new GraphError('SHAPE_MISMATCH', `${fn}: x ${x} needs a static, even head dim`, g.scoped(fn));
  }
  return hd;
}

function toF32(g: Graph, v: Value): Value {
  return v.dtype === 'float32' ? v : g.cast(v, 'float32');
}

/** (a, b) -> (a cos - b sin, b cos + a sin), pairing per `style`; cos/sin already broadcastable to a pair half. */
function rotatePairs(g: Graph, x: Value, cos: Value, sin: Value, style: RotaryStyle, half: number): Value {
  if (style === 'halves') {
    const [a, b] = g.split(x, [half, half], -1) as [Value, Value];
    const ra = g.sub(g.mul(a, cos), g.mul(b, sin));
    const rb = g.add(g.mul(b, cos), g.mul(a, sin));
    return g.concat([ra, rb], -1);
  }
  // GPT-J: view [..., hd] as [..., half, 2]; the pair partners are the last axis.
  const lead = x.shape.slice(0, -1).map(() => 0);
  const pairs = g.reshape(x, [...lead, half, 2]);
  const [a, b] = g.split(pairs, [1, 1], -1) as [Value, Value];
  const c = g.unsqueeze(cos, [-1]);
  const s = g.unsqueeze(sin, [-1]);
  const ra = g.sub(g.mul(a, c), g.mul(b, s));
  const rb = g.add(g.mul(b, c), g.mul(a, s));
  return g.reshape(g.concat([ra, rb], -1), [...lead, half * 2]);
}

/**
 * ERNIE-4.5-VL text rotary, GPT-J interleaved pairs, on q or k.
 * x: [B, S, H, hd] or [B, H, S, hd]; cos, sin: [B or 1, S, hd/2] float32
 * (`ernieTextRotaryCosSin`). vLLM: Ernie4_5_VLRotaryEmbedding (is_neox_style=False);
 * HF: apply_rotary_pos_emb with rotate_half_text.
 */
export function applyErnieTextRotary(g: Graph, x: Value, cos: Value, sin: Value, options: TextRotaryOptions = {}): Value {
  return applyTextRotary(g, x, cos, sin, 'interleaved', options);
}

/** Qwen2/2.5/3-VL text M-RoPE (neox halves) with tables from `qwen2VlMropeCosSin` / `qwen3VlMropeCosSin`. */
export function applyQwenTextRotary(g: Graph, x: Value, cos: Value, sin: Value, options: TextRotaryOptions = {}): Value {
  return applyTextRotary(g, x, cos, sin, 'halves', options);
}

function applyTextRotary(g: Graph, x: Value, cos: Value, sin: Value, style: RotaryStyle, options: TextRotaryOptions): Value {
  const fn = style === 'interleaved' ? 'applyErnieTextRotary' : 'applyQwenTextRotary';
  const layout = options.layout ?? 'BSHD';
  const hd = staticHeadDim(g, x, fn);
  if (x.rank !== 4 || cos.rank !== 3 || sin.rank !== 3) {
    throw new GraphError('RANK_MISMATCH', `${fn}: x must be 4-D and cos/sin [B, S, hd/2]; got ${x}, ${cos}, ${sin}`, g.scoped(fn));
  }
  if (options.impl === 'RotaryEmbedding') {
    if (x.dtype !== 'float32' || cos.dtype !== 'float32')
      throw new GraphError('DTYPE_MISMATCH', `${fn}: the RotaryEmbedding path takes float32 x and tables`, g.scoped(fn));
    if (layout === 'BHSD') return g.rotaryEmbedding(x, cos, sin, { interleaved: style === 'interleaved' });
    const heads = x.dim(2);
    if (typeof heads !== 'number')
      throw new GraphError('SHAPE_MISMATCH', `${fn}: the RotaryEmbedding path needs a static head count, got ${x}`, g.scoped(fn));
    const flat = g.reshape(x, [0, 0, heads * hd]);
    return g.reshape(g.rotaryEmbedding(flat, cos, sin, { interleaved: style === 'interleaved', numHeads: heads }), [0, 0, heads, hd]);
  }
  // [B, S, half] -> [B, S, 1, half] (BSHD) or [B, 1, S, half] (BHSD).
  const axis = layout === 'BSHD' ? 2 : 1;
  const c = g.unsqueeze(toF32(g, cos), [axis]);
  const s = g.unsqueeze(toF32(g, sin), [axis]);
  const out = rotatePairs(g, toF32(g, x), c, s, style, hd / 2);
  return out.dtype === x.dtype ? out : g.cast(out, x.dtype);
}

/**
 * Vision tower 2D rotary, neox halves, in float32 (then cast back).
 * x: [N, H, hd] or [B, N, H, hd]; cos, sin: [N, hd/2] (`visionRotaryCosSin`).
 * vLLM: Ernie4_5_VisionAttention (apply_rotary_pos_emb_vision); HF:
 * apply_rotary_pos_emb_vision. Qwen2-VL's vision tower uses the same.
 */
export function applyVisionRotary(g: Graph, x: Value, cos: Value, sin: Value): Value {
  const hd = staticHeadDim(g, x, 'applyVisionRotary');
  if ((x.rank !== 3 && x.rank !== 4) || cos.rank !== 2 || sin.rank !== 2) {
    throw new GraphError(
      'RANK_MISMATCH',
      `applyVisionRotary: x must be [N, H, hd] or [B, N, H, hd] and cos/sin [N, hd/2]; got ${x}, ${cos}, ${sin}`,
      g.scoped('applyVisionRotary'),
    );
  }
  const c = g.unsqueeze(toF32(g, cos), [-2]); // [N, 1, half]
  const s = g.unsqueeze(toF32(g, sin), [-2]);
  const out = rotatePairs(g, toF32(g, x), c, s, 'halves', hd / 2);
  return out.dtype === x.dtype ? out : g.cast(out, x.dtype);
}
