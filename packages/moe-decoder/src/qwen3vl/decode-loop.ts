import type { Graph, Value, Weights } from '@vlmkit/onnx-graph';
import { buildDecodeLoopModel, type DecodeLoopModelOptions } from '../decode-loop.js';
import type { Qwen3VlTextConfig } from './config.js';
import { buildQwen3VlTextDecoder } from './model.js';
import { QWEN3VL_DECODER_INPUTS } from './standalone.js';

export interface Qwen3VlDecodeLoopModelOptions extends DecodeLoopModelOptions {
  /** The deepstack levels, as `buildQwen3VlTextDecoderModel`'s. */
  deepstackLevels: number;
}

/**
 * The Qwen3-VL decoder inside the shared decode loop (`buildDecodeLoopModel`): the first step takes the
 * prompt with its vision rows, deepstack features and 3D positions; generated tokens are text (no vision
 * rows) at position (real tokens so far) + rope delta on all three axes, from `loop.next_positions`.
 */
export function buildQwen3VlDecodeLoopModel(weights: Weights, config: Qwen3VlTextConfig, options: Qwen3VlDecodeLoopModelOptions): Graph {
  const { hiddenSize: D, numKeyValueHeads: hkv, headDim: hd } = config;
  const levels = options.deepstackLevels;
  return buildDecodeLoopModel(
    {
      numHiddenLayers: config.numHiddenLayers,
      numKeyValueHeads: hkv,
      headDim: hd,
      contract: QWEN3VL_DECODER_INPUTS,
      binding: { sizes: { hidden: D, kv_heads: hkv, head_dim: hd }, counts: { layer: config.numHiddenLayers, level: levels } },
      // The model's inputs in contract order: vision rows and positions, the deepstack levels, position ids.
      step: (b, { inputs, ...loopInputs }) => {
        const [visionEmbeds, visionPositions, ...rest] = inputs as [Value, Value, ...Value[]];
        const positionIds = rest.at(-1)!;
        const deepstack = rest.slice(0, -1);
        const out = buildQwen3VlTextDecoder(b, weights, config, { ...loopInputs, visionEmbeds, visionPositions, deepstack, positionIds });
        return { logits: out.logits, present: out.present! };
      },
      next: (b, { positions }) => {
        const empty = () => b.constant('float32', [0, D], []);
        const pos = b.unsqueeze(positions, [0, 2]); // [1, B, 1]
        return [empty(), b.constant('int64', [0], []), ...Array.from({ length: levels }, empty), b.concat([pos, pos, pos], 0)];
      },
    },
    { ...options, name: options.name ?? 'qwen3vl_decode_loop' },
  );
}
