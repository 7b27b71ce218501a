import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { SelfAttentionInputs } from '../attention.js';
import { gatedSiluMlp } from '../mlp.js';
import type { KvPair } from '../types.js';
import { ernieAttention } from './attention.js';
import type { ErnieTextConfig } from './config.js';
import { type ErnieMoeOptions, ernieMoe, type MoeRouting } from './moe.js';

/** One layer's step inputs: the attention's (`hidden` the layer input, not yet normed) and the MoE's token types. */
export interface ErnieDecoderLayerInputs extends SelfAttentionInputs {
  /** [B, S] int64: nonzero sends the token to the vision experts. */
  moeTokenType: Value;
}

export interface ErnieDecoderLayerOptions extends ErnieMoeOptions {
  /** The layer's index: `config.mlpLayerTypes[layerIndex]` says whether its MLP is a MoE ('sparse') or dense. */
  layerIndex: number;
}

/**
 * vLLM: Ernie4_5_VLMoeDecoderLayer. x = x + attn(norm(x)); x = x + mlp(norm(x)), where mlp is the
 * modality-isolated MoE or a dense MLP per `mlpLayerTypes`. `w` is relative to the layer (`layers.3`);
 * `hidden` is the layer's output.
 */
export function ernieDecoderLayer(
  g: Graph,
  w: Weights,
  config: ErnieTextConfig,
  inputs: ErnieDecoderLayerInputs,
  options: ErnieDecoderLayerOptions,
): { hidden: Value; present: KvPair | undefined; routing: MoeRouting | undefined } {
  const eps = config.rmsNormEps;
  const x = inputs.hidden;
  const normedIn = nn.rmsNorm(g, x, w, 'input_layernorm', eps);
  const attn = g.scope('self_attn', () => ernieAttention(g, w.sub('self_attn'), config, { ...inputs, hidden: normedIn }));
  const h = g.add(x, attn.out);
  const normed = nn.rmsNorm(g, h, w, 'post_attention_layernorm', eps);
  const mlp = g.scope('mlp', () =>
    config.mlpLayerTypes[options.layerIndex] === 'sparse'
      ? ernieMoe(g, w.sub('mlp'), config, { hidden: normed, moeTokenType: inputs.moeTokenType }, options)
      : // vLLM: Ernie4_5_VLMoeMLP (Ernie4_5_MoeMLP, no biases).
        { out: gatedSiluMlp(g, w.sub('mlp'), normed, { intermediateSize: config.intermediateSize }), routing: undefined },
  );
  return { hidden: g.add(h, mlp.out), present: attn.present, routing: mlp.routing };
}
