import { Graph, type Weights } from '@vlmkit/onnx-graph';
import type { KvPair } from '../types.js';
import type { GraniteTextConfig } from './config.js';
import { buildGraniteTextDecoder } from './model.js';

export interface GraniteTextDecoderModelOptions {
  /** Level k -> the LLM layer its features are added before (`graniteDeepstackLevels(config.json)`); [] for a text-only graph. */
  levels: readonly number[];
  /** Also output `hidden_states.{i}` (layer outputs), `layer_inputs.{i}` (layer inputs after injection) and `inputs_embeds`, all [B, S, D]. */
  outputHiddenStates?: boolean;
  /** Graph name written into the model. */
  name?: string;
}

/**
 * The Granite 4 Vision text decoder as a complete graph with named inputs and
 * outputs: one pure step of prefill or decode with a KV cache (no state is
 * kept between runs).
 *
 * inputs
 * - `input_ids` [B, S] int64
 * - `image_positions` [N] int64: flattened b*S+s of the image tokens, in packing order (N = 0 in decode steps)
 * - `deepstack_{k}` [N, D] float32, one per level (none when `levels` is empty)
 * - `attention_mask` [B, P+S] int64 (1 real, 0 padding)
 * - `position_ids` [B, S] int64 (cos/sin are computed in the graph)
 * - `past_key_values.{i}.key` / `.value` [B, Hkv, P, headDim] float32 (P may be 0)
 *
 * outputs
 * - `logits` [B, S, V] float32 (divided by logits_scaling)
 * - `present.{i}.key` / `.value` [B, Hkv, P+S, headDim]
 * - with `outputHiddenStates`: `hidden_states.{i}`, `layer_inputs.{i}`, `inputs_embeds`
 */
export function buildGraniteTextDecoderModel(weights: Weights, config: GraniteTextConfig, options: GraniteTextDecoderModelOptions): Graph {
  const g = new Graph({ name: options.name ?? 'granite_text_decoder' });
  const { hiddenSize: D, numKeyValueHeads: hkv, headDim: hd } = config;
  const inputIds = g.input('input_ids', 'int64', ['batch', 'seq']);
  const imagePositions = options.levels.length > 0 ? g.input('image_positions', 'int64', ['image_tokens']) : undefined;
  const deepstack = options.levels.map((_, k) => g.input(`deepstack_${k}`, 'float32', ['image_tokens', D]));
  const attentionMask = g.input('attention_mask', 'int64', ['batch', 'total']);
  const positionIds = g.input('position_ids', 'int64', ['batch', 'seq']);
  const past: KvPair[] = [];
  for (let i = 0; i < config.numHiddenLayers; i++) {
    past.push({
      key: g.input(`past_key_values.${i}.key`, 'float32', ['batch', hkv, 'past', hd]),
      value: g.input(`past_key_values.${i}.value`, 'float32', ['batch', hkv, 'past', hd]),
    });
  }
  const out = buildGraniteTextDecoder(
    g,
    weights,
    config,
    { inputIds, ...(imagePositions ? { imagePositions, deepstack } : {}), attentionMask, positionIds, past },
    { levels: options.levels },
  );
  g.output(out.logits, 'logits');
  out.present!.forEach((kv, i) => {
    g.output(kv.key, `present.${i}.key`, ['batch', hkv, 'total', hd]);
    g.output(kv.value, `present.${i}.value`, ['batch', hkv, 'total', hd]);
  });
  if (options.outputHiddenStates) {
    g.output(out.inputsEmbeds, 'inputs_embeds');
    out.layerInputs.forEach((h, i) => {
      g.output(h, `layer_inputs.${i}`);
    });
    out.layerOutputs.forEach((h, i) => {
      g.output(h, `hidden_states.${i}`);
    });
  }
  return g;
}
