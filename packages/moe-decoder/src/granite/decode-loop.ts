import type { Graph, Value, Weights } from '@vlmkit/onnx-graph';
import { buildDecodeLoopModel, type DecodeLoopModelOptions } from '../decode-loop.js';
import type { GraniteTextConfig } from './config.js';
import { buildGraniteTextDecoder } from './model.js';
import { GRANITE_DECODER_INPUTS } from './standalone.js';

export interface GraniteDecodeLoopModelOptions extends DecodeLoopModelOptions {
  /** Level k -> the LLM layer its features are added before; [] for a text-only graph (as `buildGraniteTextDecoderModel`). */
  levels: readonly number[];
}

/**
 * The Granite decoder inside the shared decode loop (`buildDecodeLoopModel`): the first step takes the prompt
 * with its image rows and deepstack features; generated tokens are text (no image rows) at position (real
 * tokens so far), fed as `position_ids` from `loop.next_positions` (cos/sin are computed in the decoder).
 */
export function buildGraniteDecodeLoopModel(weights: Weights, config: GraniteTextConfig, options: GraniteDecodeLoopModelOptions): Graph {
  const D = config.hiddenSize;
  const levels = options.levels;
  return buildDecodeLoopModel(
    {
      numHiddenLayers: config.numHiddenLayers,
      numKeyValueHeads: config.numKeyValueHeads,
      headDim: config.headDim,
      contract: GRANITE_DECODER_INPUTS,
      binding: {
        sizes: { hidden: D, kv_heads: config.numKeyValueHeads, head_dim: config.headDim },
        counts: { layer: config.numHiddenLayers, level: levels.length },
        include: { image_positions: levels.length > 0 },
      },
      // The loop hands the step its ids, mask, cache and logits_to_keep under the decoder's input names;
      // Granite's own inputs (image rows, deepstack features, position ids) come in contract order.
      step: (b, { inputs, ...loopInputs }) => {
        const positionIds = inputs.at(-1)!;
        const [imagePositions, ...deepstack] = inputs.slice(0, -1);
        const image = imagePositions ? { imagePositions, deepstack } : {};
        const out = buildGraniteTextDecoder(b, weights, config, { ...loopInputs, ...image, positionIds }, { levels });
        return { logits: out.logits, present: out.present! };
      },
      next: (b, { positions }) => {
        const empty: Value[] =
          levels.length > 0 ? [b.constant('int64', [0], []), ...levels.map(() => b.constant('float32', [0, D], []))] : [];
        return [...empty, b.unsqueeze(positions, [1])];
      },
    },
    { ...options, name: options.name ?? 'granite_decode_loop' },
  );
}
