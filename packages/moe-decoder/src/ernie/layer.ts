import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { type AttentionContext, ernieAttention } from './attention.js';
import type { ErnieTextConfig } from './config.js';
import { ernieMlp } from './mlp.js';
import { type ExpertsImpl, ernieMoe, type MoeRouting } from './moe.js';

/**
 * vLLM: Ernie4_5_VLMoeDecoderLayer. x + attn(norm(x)), then + mlp(norm(.)),
 * where mlp is dense or the modality-isolated MoE per `mlpLayerTypes`.
 * `w` is relative to the layer (`layers.3`).
 */
export function ernieDecoderLayer(
  g: Graph,
  w: Weights,
  config: ErnieTextConfig,
  layer: number,
  x: Value,
  ctx: AttentionContext & { moeTokenType: Value; routing?: boolean; experts?: ExpertsImpl },
): { hidden: Value; presentKey: Value | undefined; presentValue: Value | undefined; routing: MoeRouting | undefined } {
  const eps = config.rmsNormEps;
  const normedIn = nn.rmsNorm(g, x, w, 'input_layernorm', eps);
  const attn = g.scope('self_attn', () => ernieAttention(g, w.sub('self_attn'), config, normedIn, ctx));
  const h = g.add(x, attn.out);
  const normed = nn.rmsNorm(g, h, w, 'post_attention_layernorm', eps);
  const mlp = g.scope('mlp', () =>
    config.mlpLayerTypes[layer] === 'sparse'
      ? ernieMoe(g, w.sub('mlp'), config, normed, ctx.moeTokenType, {
          routing: ctx.routing ?? false,
          ...(ctx.experts ? { experts: ctx.experts } : {}),
        })
      : { out: ernieMlp(g, w.sub('mlp'), normed, config.intermediateSize), routing: undefined },
  );
  return { hidden: g.add(h, mlp.out), presentKey: attn.presentKey, presentValue: attn.presentValue, routing: mlp.routing };
}
