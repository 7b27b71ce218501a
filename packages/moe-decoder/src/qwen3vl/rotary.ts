import { interleavedFrequencyAxes, ropeInverseFrequencies } from '@vlmkit/mrope';
import type { Graph, Value } from '@vlmkit/onnx-graph';
import type { Qwen3VlTextConfig } from './config.js';

/**
 * The rotary tables [B, S, headDim/2] float32 from 3D `positionIds` [3, B, S] int64 (t, h, w rows), in the
 * graph. HF Qwen3VLTextRotaryEmbedding: angle = float32(position) * inv_freq for each axis (one float32
 * product), then frequency i takes its axis' angle by the interleaved sections (@vlmkit/mrope
 * `interleavedFrequencyAxes`: [t h w t h w ...]); cos and sin in float32, applied neox style (halves).
 */
export function qwen3VlRotaryTables(g: Graph, positionIds: Value, config: Qwen3VlTextConfig): { cos: Value; sin: Value } {
  const invFreq = ropeInverseFrequencies(config.headDim, config.ropeTheta);
  const axes = interleavedFrequencyAxes(config.headDim, config.mropeSection);
  const half = invFreq.length;
  // In float32 in a 16-bit graph too (HF: autocast off); the rotation casts the tables to its dtype.
  return g.scope('rotary_emb', () =>
    g.inFloat32(() => {
      const pos = g.unsqueeze(g.cast(positionIds, 'float32'), [3]); // [3, B, S, 1]
      const freqs = g.mul(pos, g.constant('float32', [half], invFreq)); // [3, B, S, half]
      const [t, h, w] = g.split(freqs, [1, 1, 1], 0).map((f) => g.squeeze(f, [0])) as [Value, Value, Value];
      const axis = g.constant('int64', [half], Array.from(axes, BigInt));
      const angle = g.where(g.equal(axis, g.scalar(1, 'int64')), h, g.where(g.equal(axis, g.scalar(2, 'int64')), w, t));
      return { cos: g.cos(angle), sin: g.sin(angle) };
    }),
  );
}
