import { ropeInverseFrequencies } from '@vlmkit/mrope';
import type { Graph, Value } from '@vlmkit/onnx-graph';
import type { GraniteTextConfig } from './config.js';

/**
 * The rotary tables [B, S, headDim/2] float32 from `positionIds` [B, S]
 * int64, in the graph: angle = float32(position) * inv_freq (one float32
 * product, as torch's `inv_freq @ position_ids`), then cos and sin. HF:
 * Granite4VisionTextRotaryEmbedding (default rope, attention_scaling 1);
 * `inv_freq = 1 / theta^(2i / headDim)` from @vlmkit/mrope.
 */
export function graniteRotaryTables(g: Graph, positionIds: Value, config: GraniteTextConfig): { cos: Value; sin: Value } {
  const invFreq = ropeInverseFrequencies(config.headDim, config.ropeTheta);
  // In float32 in a 16-bit graph too (HF: autocast off); the rotation casts the tables to its dtype.
  return g.scope('rotary_emb', () =>
    g.inFloat32(() => {
      const pos = g.unsqueeze(g.cast(positionIds, 'float32'), [2]); // [B, S, 1]
      const freqs = g.mul(pos, g.constant('float32', [invFreq.length], invFreq)); // [B, S, hd/2]
      return { cos: g.cos(freqs), sin: g.sin(freqs) };
    }),
  );
}

/**
 * Position ids [B, S] of a left-padded prompt as HF `generate()` makes them:
 * cumsum(attention_mask) - 1, and `padPosition` (default 0) on padding.
 * `attentionMask` is [B, S] row-major (1 real, 0 padding). Padded positions
 * only change the (masked) padded rows: HF's `prepare_inputs_for_generation`
 * fills them with 1, the fixtures' explicit position_ids with 0.
 */
export function granitePositionIds(attentionMask: ArrayLike<number | bigint>, batch: number, padPosition = 0): BigInt64Array {
  const S = attentionMask.length / batch;
  const out = new BigInt64Array(attentionMask.length);
  for (let b = 0; b < batch; b++) {
    let seen = 0;
    for (let s = 0; s < S; s++) {
      const real = Number(attentionMask[b * S + s]) !== 0;
      if (real) seen++;
      out[b * S + s] = BigInt(real ? seen - 1 : padPosition);
    }
  }
  return out;
}

/**
 * Position ids [B, steps] of the next generated tokens: each row continues at
 * its count of real tokens so far (HF generate: cumsum(mask) - 1 over the
 * grown mask). No rope delta: Granite's positions are 1D.
 */
export function graniteDecodePositions(realTokensSoFar: readonly number[], steps = 1): BigInt64Array {
  const out = new BigInt64Array(realTokensSoFar.length * steps);
  realTokensSoFar.forEach((n, b) => {
    for (let t = 0; t < steps; t++) out[b * steps + t] = BigInt(n + t);
  });
  return out;
}
