import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import type { SelfAttentionInputs } from '../attention.js';
import type { MoeRouting } from '../ernie/moe.js';
import { gatedSiluMlp } from '../mlp.js';
import type { KvPair } from '../types.js';
import { qwen3VlAttention } from './attention.js';
import type { Qwen3VlTextConfig } from './config.js';
import { qwen3VlMoe } from './moe.js';

/**
 * vLLM: Qwen3DecoderLayer / Qwen3MoeDecoderLayer. x = x + attn(norm(x)); x = x + mlp(norm(x)), where mlp is
 * the routed experts or a dense SiLU MLP per `mlpLayerTypes[layerIndex]`. `w` is relative to the layer.
 */
export function qwen3VlDecoderLayer(
  g: Graph,
  w: Weights,
  config: Qwen3VlTextConfig,
  inputs: SelfAttentionInputs,
  layerIndex: number,
): { hidden: Value; present: KvPair | undefined; routing: MoeRouting | undefined } {
  const eps = config.rmsNormEps;
  const x = inputs.hidden;
  const normedIn = nn.rmsNorm(g, x, w, 'input_layernorm', eps);
  const attn = g.scope('self_attn', () => qwen3VlAttention(g, w.sub('self_attn'), config, { ...inputs, hidden: normedIn }));
  const h = g.add(x, attn.out);
  const normed = nn.rmsNorm(g, h, w, 'post_attention_layernorm', eps);
  const mlp = g.scope('mlp', () =>
    config.mlpLayerTypes[layerIndex] === 'sparse'
      ? qwen3VlMoe(g, w.sub('mlp'), config, normed)
      : { out: gatedSiluMlp(g, w.sub('mlp'), normed, { intermediateSize: config.intermediateSize }), routing: undefined },
  );
  return { hidden: g.add(h, mlp.out), present: attn.present, routing: mlp.routing };
}
