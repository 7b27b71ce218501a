import { ropeInverseFrequencies } from '@vlmkit/mrope';
import type { Graph, Value, Weights } from '@vlmkit/onnx-graph';
import { buildDecodeLoopModel, type DecodeLoopModelOptions } from '../decode-loop.js';
import type { ErnieTextConfig } from './config.js';
import { buildErnieTextDecoder } from './model.js';
import { ERNIE_DECODER_INPUTS } from './standalone.js';

/** `emptyModalityIf` builds the step as `buildErnieTextDecoderModel` does. */
export interface ErnieDecodeLoopModelOptions extends DecodeLoopModelOptions {
  /** See `ErnieTextDecoderModelOptions`. */
  emptyModalityIf?: boolean;
}

/**
 * The ERNIE decoder inside the shared decode loop (`buildDecodeLoopModel`): the first step takes the prompt
 * with its vision rows and the host's 3D rotary tables; generated tokens are text (text experts, no vision
 * rows) at position (real tokens so far) + rope delta on all three axes, so their `rope_cos` / `rope_sin` are
 * computed in the body from `loop.next_positions`.
 */
export function buildErnieDecodeLoopModel(weights: Weights, config: ErnieTextConfig, options: ErnieDecodeLoopModelOptions = {}): Graph {
  const { hiddenSize: D, numKeyValueHeads: hkv, headDim: hd } = config;
  const invFreq = ropeInverseFrequencies(hd, config.ropeTheta);
  return buildDecodeLoopModel(
    {
      numHiddenLayers: config.numHiddenLayers,
      numKeyValueHeads: hkv,
      headDim: hd,
      contract: ERNIE_DECODER_INPUTS,
      binding: { sizes: { hidden: D, half_head_dim: hd / 2, kv_heads: hkv, head_dim: hd }, counts: { layer: config.numHiddenLayers } },
      step: (b, x) => {
        const [visionEmbeds, visionPositions, moeTokenType, ropeCos, ropeSin] = x.inputs as [Value, Value, Value, Value, Value];
        const out = buildErnieTextDecoder(
          b,
          weights,
          config,
          {
            inputIds: x.inputIds,
            visionEmbeds,
            visionPositions,
            moeTokenType,
            attentionMask: x.attentionMask,
            ropeCos,
            ropeSin,
            past: x.past,
            logitsToKeep: x.logitsToKeep,
          },
          options.emptyModalityIf !== undefined ? { emptyModalityIf: options.emptyModalityIf } : {},
        );
        return { logits: out.logits, present: out.present! };
      },
      next: (b, { positions, tokens }) => {
        const ids = b.unsqueeze(tokens, [1]);
        const { cos, sin } = textRotary(b, positions, invFreq);
        return [
          b.constant('float32', [0, D], []),
          b.constant('int64', [0], []),
          b.constantOfShape(b.shapeOf(ids), 0, 'int64', ['batch', 1]),
          cos,
          sin,
        ];
      },
    },
    { ...options, name: options.name ?? 'ernie_decode_loop' },
  );
}

/**
 * `rope_cos` / `rope_sin` [B, 1, headDim/2] of text tokens at `positions` [B]: with t = h = w every frequency
 * turns by float32(position * inv_freq[i]) (one float32 product, @vlmkit/mrope `angle`), and cos / sin are
 * taken in float64 and rounded to float32, as the host's `mropeCosSin` (Math.cos into a Float32Array) does.
 */
function textRotary(b: Graph, positions: Value, invFreq: Float32Array): { cos: Value; sin: Value } {
  // In float32 in a 16-bit graph too: the tables are inputs the host makes in float32.
  return b.scope('rotary_emb', () =>
    b.inFloat32(() => {
      const pos = b.unsqueeze(b.cast(positions, 'float32'), [1, 2]); // [B, 1, 1]
      const angle = b.cast(b.mul(pos, b.constant('float32', [invFreq.length], invFreq)), 'float64');
      return { cos: b.cast(b.cos(angle), 'float32'), sin: b.cast(b.sin(angle), 'float32') };
    }),
  );
}
