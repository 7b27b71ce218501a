import { type Graph, nn, type OpSet, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { SelfAttentionInputs } from '../attention.js';
import { gatedSiluMlp } from '../mlp.js';
import type { KvPair } from '../types.js';
import { ernieAttention } from './attention.js';
import type { ErnieTextConfig } from './config.js';
import { type ErnieMoeOptions, ernieMoe, type MoeRouting } from './moe.js';

/** One layer's step inputs: the attention's (with `hidden` the layer input, not yet normed) and the MoE's token types. */
export interface ErnieDecoderLayerInputs extends SelfAttentionInputs {
  /** [B, S] int64: nonzero sends the token to the vision experts. */
  moeTokenType: Value;
  /**
   * The previous layer's last residual branch (its `next.addend`): the layer input is `hidden + addend`,
   * added here together with input_layernorm (one SkipSimplifiedLayerNormalization on 'contrib').
   */
  addend?: Value | undefined;
}

export interface ErnieDecoderLayerOptions extends ErnieMoeOptions {
  /** The layer's index: `config.mlpLayerTypes[layerIndex]` says whether its MLP is a MoE ('sparse') or dense. */
  layerIndex: number;
  /** Standard or com.microsoft fused ops (default 'onnx'); with 'contrib', `inputs.contrib` holds the attention's shared inputs. */
  ops?: OpSet;
}

/**
 * vLLM: Ernie4_5_VLMoeDecoderLayer. x + attn(norm(x)), then + mlp(norm(.)),
 * where mlp is the modality-isolated MoE or a dense MLP per `mlpLayerTypes`.
 * `w` is relative to the layer (`layers.3`). The last residual add is left to
 * the next norm (`next`: the next layer's input_layernorm or the final norm
 * adds it), so each add meets the norm after it (vLLM's fused add-RMSNorm);
 * `input` is this layer's input, hidden + addend (the previous layer's output).
 */
export function ernieDecoderLayer(
  g: Graph,
  w: Weights,
  config: ErnieTextConfig,
  inputs: ErnieDecoderLayerInputs,
  options: ErnieDecoderLayerOptions,
): { input: Value; next: nn.Residual; present: KvPair | undefined; routing: MoeRouting | undefined } {
  const eps = config.rmsNormEps;
  const ops = options.ops ?? 'onnx';
  const { sum: x, normed: normedIn } = nn.residualRmsNorm(g, inputs, w, 'input_layernorm', eps, ops);
  const attn = g.scope('self_attn', () => ernieAttention(g, w.sub('self_attn'), config, { ...inputs, hidden: normedIn }));
  const { sum: h, normed } = nn.residualRmsNorm(g, { hidden: x, addend: attn.out }, w, 'post_attention_layernorm', eps, ops);
  const mlp = g.scope('mlp', () =>
    config.mlpLayerTypes[options.layerIndex] === 'sparse'
      ? ernieMoe(g, w.sub('mlp'), config, { hidden: normed, moeTokenType: inputs.moeTokenType }, options)
      : // vLLM: Ernie4_5_VLMoeMLP (Ernie4_5_MoeMLP, no biases).
        { out: gatedSiluMlp(g, w.sub('mlp'), normed, { intermediateSize: config.intermediateSize }), routing: undefined },
  );
  return { input: x, next: { hidden: h, addend: mlp.out }, present: attn.present, routing: mlp.routing };
}
