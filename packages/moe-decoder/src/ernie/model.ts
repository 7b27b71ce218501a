import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { causalPaddingMask } from '../attention-mask.js';
import { embedTokens } from '../embedding.js';
import { MoeDecoderError } from '../errors.js';
import { lmHead } from '../lm-head.js';
import { keepLastPositions } from '../logits-to-keep.js';
import type { KvCacheMode, KvPair } from '../types.js';
import type { ErnieTextConfig } from './config.js';
import { ernieDecoderLayer } from './layer.js';
import type { ErnieMoeOptions, MoeRouting } from './moe.js';

export interface ErnieTextDecoderInputs {
  /** [B, S] int64 token ids. Give these or `inputsEmbeds`. */
  inputIds?: Value;
  /** [B, S, D] float32 embeddings already merged with vision features (instead of `inputIds`). */
  inputsEmbeds?: Value;
  /** [N, D] float32 vision features (N may be 0), scattered at `visionPositions`; only with `inputIds`. */
  visionEmbeds?: Value;
  /** [N] int64 flattened b * S + s rows that `visionEmbeds` replace. */
  visionPositions?: Value;
  /** [B, S] int64: nonzero sends the token to the vision experts (patches and their start/end tokens). */
  moeTokenType: Value;
  /** [B, P + S] int64: 1 = real token, 0 = padding (left padding), over past and current positions. */
  attentionMask: Value;
  /** [B, S, headDim/2] float32 rotary tables from the 3D positions (`ernieRotaryTables`). */
  ropeCos: Value;
  ropeSin: Value;
  /** One KV pair per layer, [B, Hkv, P, headDim] (P may be 0). Without it no present values are returned. */
  past?: readonly KvPair[];
  /** int64 scalar: logits for the last n positions only, 0 for all (HF `logits_to_keep`). Without it, all positions. */
  logitsToKeep?: Value;
}

/** `emptyModalityIf` and `routing` (see `ErnieMoeOptions`) reach every MoE layer. */
export interface ErnieTextDecoderOptions extends ErnieMoeOptions {
  /** Scope of the decoder's nodes and initializers (default 'decoder'). */
  scope?: string;
  /** How `past` and `present` work (`KvCacheMode`); default 'concat'. */
  kvCache?: KvCacheMode;
}

export interface ErnieTextDecoderOutputs {
  /** [B, S, V] float32 ([B, n, V] with `logitsToKeep` n > 0). */
  logits: Value;
  /** [B, S, D] after the final norm. */
  lastHiddenState: Value;
  /** The output of each decoder layer, [B, S, D] (HF's per-layer hooks). */
  layerOutputs: Value[];
  /** Per layer, [B, Hkv, P + S, headDim] ('append': [B, Hkv, S, headDim]); present when `past` was given. */
  present: KvPair[] | undefined;
  /**
   * With the `routing` option, per layer (undefined for dense layers): the
   * experts each of the B*S tokens chose, ids [N, k] int64 and weights
   * [N, k], from its modality's router (debugging, tests).
   */
  routing: (MoeRouting | undefined)[];
}

/**
 * vLLM: Ernie4_5_VLMoeForCausalLM (Ernie4_5_VLMoeModel + lm_head). Adds the
 * text decoder to `g` inside `scope` (default 'decoder'): embeddings with
 * vision rows scattered in, the decoder layers with KV cache, the final
 * norm and lm_head (with tied embeddings, embed_tokens' weight: stored once).
 * Written in float32 (parameters in another dtype are cast in the graph, once
 * at save with `fold`); `floatConvertPass` makes the 16-bit graph, in which
 * norms, router and rotary run in float32 inside (as HF) and `logits` stay
 * float32.
 */
export function buildErnieTextDecoder(
  g: Graph,
  weights: Weights,
  config: ErnieTextConfig,
  inputs: ErnieTextDecoderInputs,
  options: ErnieTextDecoderOptions = {},
): ErnieTextDecoderOutputs {
  const L = config.numHiddenLayers;
  if ((inputs.inputIds === undefined) === (inputs.inputsEmbeds === undefined)) {
    throw new MoeDecoderError('BAD_INPUT', 'buildErnieTextDecoder: pass exactly one of inputIds and inputsEmbeds.');
  }
  if (
    (inputs.visionEmbeds === undefined) !== (inputs.visionPositions === undefined) ||
    (inputs.visionEmbeds !== undefined && inputs.inputIds === undefined)
  ) {
    throw new MoeDecoderError('BAD_INPUT', 'buildErnieTextDecoder: visionEmbeds and visionPositions go together, and only with inputIds.');
  }
  if (inputs.past !== undefined && inputs.past.length !== L) {
    throw new MoeDecoderError('BAD_INPUT', `buildErnieTextDecoder: past has ${inputs.past.length} layers, the config has ${L}.`);
  }
  return g.scope(options.scope ?? 'decoder', () => {
    const x0 =
      inputs.inputIds !== undefined
        ? embedTokens(
            g,
            weights,
            inputs.inputIds,
            config,
            inputs.visionEmbeds && { embeds: inputs.visionEmbeds, positions: inputs.visionPositions! },
          )
        : inputs.inputsEmbeds!;
    const mask = causalPaddingMask(g, inputs.attentionMask, x0);
    const layerOutputs: Value[] = [];
    const present: KvPair[] = [];
    const routing: (MoeRouting | undefined)[] = [];
    let x = x0;
    for (let i = 0; i < L; i++) {
      const past = inputs.past?.[i];
      const step = {
        hidden: x,
        cos: inputs.ropeCos,
        sin: inputs.ropeSin,
        mask,
        moeTokenType: inputs.moeTokenType,
        ...(options.kvCache ? { kvCache: options.kvCache } : {}),
      };
      const r = g.scope(`layers.${i}`, () =>
        ernieDecoderLayer(
          g,
          weights.sub(`layers.${i}`),
          config,
          { ...step, ...(past !== undefined ? { past } : {}) },
          {
            layerIndex: i,
            routing: options.routing ?? false,
            ...(options.emptyModalityIf !== undefined ? { emptyModalityIf: options.emptyModalityIf } : {}),
          },
        ),
      );
      x = r.hidden;
      layerOutputs.push(x);
      routing.push(r.routing);
      if (r.present !== undefined) present.push(r.present);
    }
    const lastHiddenState = nn.rmsNorm(g, x, weights, 'norm', config.rmsNormEps);
    const kept = inputs.logitsToKeep ? keepLastPositions(g, lastHiddenState, inputs.logitsToKeep) : lastHiddenState;
    // HF: lm_head in the compute dtype; a graph's float32 output stays float32 (host sampling reads float32).
    const logits = lmHead(g, weights, config, kept);
    return { logits, lastHiddenState, layerOutputs, present: inputs.past !== undefined ? present : undefined, routing };
  });
}
