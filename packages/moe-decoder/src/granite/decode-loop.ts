import {
  applyPasses,
  CONTRIB_PASSES,
  type ComputeDType,
  type Graph,
  type QuantizeRequest,
  type Value,
  type Weights,
} from '@vlmkit/onnx-graph';
import { buildDecodeLoopModel } from '../decode-loop.js';
import type { DecoderOpsOptions } from '../types.js';
import type { GraniteTextConfig } from './config.js';
import { buildGraniteTextDecoder } from './model.js';
import { GRANITE_DECODER_INPUTS } from './standalone.js';

/** `ops` builds the step as `buildGraniteTextDecoderModel` does. */
export interface GraniteDecodeLoopModelOptions extends DecoderOpsOptions {
  /** Level k -> the LLM layer its features are added before; [] for a text-only graph (as `buildGraniteTextDecoderModel`). */
  levels: readonly number[];
  quantize?: QuantizeRequest | undefined;
  /** The float type the step computes in; the KV cache is carried in it (`DecodeLoopModelOptions.computeDtype`). */
  computeDtype?: ComputeDType | undefined;
  /** Graph name written into the model. */
  name?: string;
}

/**
 * The Granite decoder inside the shared decode loop (`buildDecodeLoopModel`): the first step takes the prompt
 * with its image rows and deepstack features; generated tokens are text (no image rows) at position (real
 * tokens so far), fed as `position_ids` from `loop.next_positions` (cos/sin are computed in the decoder).
 */
export function buildGraniteDecodeLoopModel(weights: Weights, config: GraniteTextConfig, options: GraniteDecodeLoopModelOptions): Graph {
  const D = config.hiddenSize;
  const levels = options.levels;
  const g = buildDecodeLoopModel(
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
      step: (b, x) => {
        const positionIds = x.inputs.at(-1)!;
        const [imagePositions, ...deepstack] = x.inputs.slice(0, -1);
        const out = buildGraniteTextDecoder(
          b,
          weights,
          config,
          {
            inputIds: x.inputIds,
            ...(imagePositions ? { imagePositions, deepstack } : {}),
            attentionMask: x.attentionMask,
            positionIds,
            past: x.past,
            logitsToKeep: x.logitsToKeep,
          },
          {
            levels,
            ...(options.ops ? { ops: options.ops } : {}),
          },
        );
        return { logits: out.logits, present: out.present! };
      },
      next: (b, { positions }) => {
        const empty: Value[] =
          levels.length > 0 ? [b.constant('int64', [0], []), ...levels.map(() => b.constant('float32', [0, D], []))] : [];
        return [...empty, b.unsqueeze(positions, [1])];
      },
    },
    { name: options.name ?? 'granite_decode_loop', quantize: options.quantize, computeDtype: options.computeDtype },
  );
  if (options.ops === 'contrib') applyPasses(g, CONTRIB_PASSES);
  return g;
}
