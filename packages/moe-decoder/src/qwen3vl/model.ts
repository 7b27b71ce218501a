import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { causalPaddingMask } from '../attention-mask.js';
import { embedTokens } from '../embedding.js';
import type { MoeRouting } from '../ernie/moe.js';
import { MoeDecoderError } from '../errors.js';
import { addDeepstackFeatures } from '../granite/deepstack.js';
import { lmHead } from '../lm-head.js';
import { keepLastPositions } from '../logits-to-keep.js';
import type { KvCacheMode, KvPair } from '../types.js';
import type { Qwen3VlTextConfig } from './config.js';
import { qwen3VlDecoderLayer } from './layer.js';
import { qwen3VlRotaryTables } from './rotary.js';

export interface Qwen3VlTextDecoderInputs {
  /** [B, S] int64 token ids. */
  inputIds: Value;
  /** [N, D] float32 vision features (N may be 0), scattered at `visionPositions` (HF: masked_scatter). */
  visionEmbeds?: Value;
  /** [N] int64 flattened b * S + s rows of the image then video placeholders. */
  visionPositions?: Value;
  /** Level k's [N, D] float32 features, rows as `visionEmbeds`: added at `visionPositions` after layer k. */
  deepstack?: readonly Value[];
  /** [B, P + S] int64: 1 = real token, 0 = padding (left padding), over past and current positions. */
  attentionMask: Value;
  /** [3, B, S] int64 t, h, w positions (HF get_rope_index; decode: real tokens so far + rope delta). */
  positionIds: Value;
  /** One KV pair per layer, [B, Hkv, P, headDim] (P may be 0). Without it no present values are returned. */
  past?: readonly KvPair[];
  /** int64 scalar: logits for the last n positions only, 0 for all (HF `logits_to_keep`). */
  logitsToKeep?: Value;
}

export interface Qwen3VlTextDecoderOptions {
  /** Scope of the decoder's nodes and initializers (default 'decoder'). */
  scope?: string;
  /** How `past` and `present` work (`KvCacheMode`); default 'concat'. */
  kvCache?: KvCacheMode;
}

export interface Qwen3VlTextDecoderOutputs {
  /** [B, S, V] float32 ([B, n, V] with `logitsToKeep` n > 0). */
  logits: Value;
  /** The output of each decoder layer after its deepstack level was added, [B, S, D] (HF's hidden_states[i + 1]). */
  layerOutputs: Value[];
  /** Per layer, [B, Hkv, P + S, headDim] ('append': [B, Hkv, S, headDim]); present when `past` was given. */
  present: KvPair[] | undefined;
  /** Per layer: each token's experts and weights (undefined for dense layers). */
  routing: (MoeRouting | undefined)[];
}

/**
 * HF: Qwen3VLTextModel / Qwen3VLMoeTextModel + lm_head; vLLM: Qwen3LLMModel (deepstack). Adds the decoder
 * to `g` inside a scope: embeddings with the vision rows scattered in, the decoder layers with a KV cache,
 * deepstack level k added at the vision rows right after layer k, the final norm, lm_head (tied:
 * embed_tokens' weight, stored once). Written in float32; `floatConvertPass` makes the 16-bit graph.
 */
export function buildQwen3VlTextDecoder(
  g: Graph,
  weights: Weights,
  config: Qwen3VlTextConfig,
  inputs: Qwen3VlTextDecoderInputs,
  options: Qwen3VlTextDecoderOptions = {},
): Qwen3VlTextDecoderOutputs {
  const { numHiddenLayers: L, hiddenSize: D } = config;
  const bad = (m: string): never => {
    throw new MoeDecoderError('BAD_INPUT', `buildQwen3VlTextDecoder: ${m}`);
  };
  const positions = inputs.visionPositions;
  const deepstack = inputs.deepstack ?? [];
  if ((inputs.visionEmbeds === undefined) !== (positions === undefined)) bad('visionEmbeds and visionPositions go together.');
  if (deepstack.length > L) bad(`${deepstack.length} deepstack levels for ${L} layers.`);
  if (deepstack.length > 0 && positions === undefined) bad('deepstack features need visionPositions.');
  if (inputs.past !== undefined && inputs.past.length !== L) bad(`past has ${inputs.past.length} layers, the config has ${L}.`);

  return g.scope(options.scope ?? 'decoder', () => {
    const vision = inputs.visionEmbeds && { embeds: inputs.visionEmbeds, positions: positions! };
    const x0 = embedTokens(g, weights, inputs.inputIds, config, vision);
    const mask = causalPaddingMask(g, inputs.attentionMask, x0);
    const { cos, sin } = qwen3VlRotaryTables(g, inputs.positionIds, config);
    const layerOutputs: Value[] = [];
    const present: KvPair[] = [];
    const routing: (MoeRouting | undefined)[] = [];
    let x = x0;
    for (let i = 0; i < L; i++) {
      const past = inputs.past?.[i];
      const r = g.scope(`layers.${i}`, () =>
        qwen3VlDecoderLayer(
          g,
          weights.sub(`layers.${i}`),
          config,
          {
            hidden: x,
            cos,
            sin,
            mask,
            ...(past !== undefined ? { past } : {}),
            ...(options.kvCache ? { kvCache: options.kvCache } : {}),
          },
          i,
        ),
      );
      x = r.hidden;
      // HF Qwen3VLTextModel._deepstack_process: level i is added right after layer i.
      const level = deepstack[i];
      if (level !== undefined) {
        x = g.scope(`deepstack.${i}`, () => addDeepstackFeatures(g, x, { positions: positions!, features: level }, D));
      }
      layerOutputs.push(x);
      routing.push(r.routing);
      if (r.present !== undefined) present.push(r.present);
    }
    const last = nn.rmsNorm(g, x, weights, 'norm', config.rmsNormEps);
    const kept = inputs.logitsToKeep ? keepLastPositions(g, last, inputs.logitsToKeep) : last;
    const logits = lmHead(g, weights, config, kept);
    return { logits, layerOutputs, present: inputs.past !== undefined ? present : undefined, routing };
  });
}
