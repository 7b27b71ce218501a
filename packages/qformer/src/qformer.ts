import { applyComputeDtype, type ComputeDType, contract, declareInputs, Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { QFormerError } from './errors.js';
import { type Blip2QFormerConfig, validateQFormerConfig } from './qformer-config.js';

/** Values the Q-Former reads from the caller's graph. */
export interface Blip2QFormerInputs {
  /** [B, Q, H]: the query tokens (BLIP-2: the learned query_tokens expanded to the batch; Granite: query + downsampled features). */
  readonly queryEmbeds: Value;
  /** [B, T, E]: what the cross-attention layers attend to (the vision features), same B. */
  readonly encoderHiddenStates: Value;
}

export interface Blip2QFormerOutputs {
  /** [B, Q, H]: last_hidden_state, in the graph's compute dtype (both inputs are cast to it). */
  readonly hidden: Value;
}

export interface Blip2QFormerOptions {
  /** Scope of the nodes and initializers (default `qformer`, the module's name in BLIP-2 and Granite checkpoints). */
  readonly scope?: string;
  /**
   * Standalone models only: the float type the graph computes in (default 'float32': built in it, then
   * converted by onnx-graph's `floatConvertPass`); inputs and output stay float32.
   */
  readonly computeDtype?: ComputeDType | undefined;
}

/**
 * Adds HF 5.17's Blip2QFormerModel (query tokens only, no attention masks) to `g`:
 * layernorm (+ dropout, identity at inference) over the query embeds, then
 * per layer: self-attention, cross-attention to the encoder states on layers
 * i % crossAttentionFrequency == 0, and the query feed-forward
 * (intermediate_query -> act -> output_query). vLLM's blip2.Blip2QFormerModel is the same.
 * `weights` holds `qformerExpectedParameters(config)`; bf16/fp16 weights are cast to the input dtype.
 */
export function buildBlip2QFormer(
  g: Graph,
  weights: Weights,
  config: Blip2QFormerConfig,
  inputs: Blip2QFormerInputs,
  options: Blip2QFormerOptions = {},
): Blip2QFormerOutputs {
  const cfg = validateQFormerConfig(config);
  checkInputs(inputs, cfg);
  return g.scope(options.scope ?? 'qformer', () => {
    // HF: Blip2QFormerModel.forward. The dropout after layernorm is the identity in eval mode.
    // Both inputs in float32 (16-bit ones widened; `floatConvertPass` makes the 16-bit graph).
    const encoder = g.cast(inputs.encoderHiddenStates, 'float32');
    let hidden = nn.layerNorm(g, g.cast(inputs.queryEmbeds, 'float32'), weights, 'layernorm', cfg.layerNormEps);
    module(g, weights, 'encoder', (w) => {
      for (let i = 0; i < cfg.numHiddenLayers; i++) {
        hidden = module(g, w, `layer.${i}`, (lw) => qformerLayer(g, lw, cfg, { index: i, hidden, encoder }));
      }
    });
    return { hidden };
  });
}

/** The standalone model's inputs; `hidden` and `encoder_hidden` are bound from the config. */
export const QFORMER_INPUTS = contract({
  query_embeds: ['float32', ['batch', 'num_queries', 'hidden']],
  encoder_hidden_states: ['float32', ['batch', 'encoder_len', 'encoder_hidden']],
});

/** Names of the standalone model's inputs (`QFORMER_INPUTS`) and output. */
export const QFORMER_IO = {
  queryEmbeds: QFORMER_INPUTS.names.query_embeds,
  encoderHiddenStates: QFORMER_INPUTS.names.encoder_hidden_states,
  hidden: 'last_hidden_state',
} as const;

/**
 * The Q-Former alone as a complete graph: inputs `query_embeds` float32
 * [batch, num_queries, H] and `encoder_hidden_states` float32 [batch, encoder_len, E];
 * output `last_hidden_state` float32 [batch, num_queries, H] (computed in `options.computeDtype`).
 */
export function buildBlip2QFormerModel(weights: Weights, config: Blip2QFormerConfig, options: Blip2QFormerOptions = {}): Graph {
  const cfg = validateQFormerConfig(config);
  const g = new Graph({ name: 'blip2_qformer' });
  const { query_embeds: queryEmbeds, encoder_hidden_states: encoderHiddenStates } = declareInputs(g, QFORMER_INPUTS, {
    sizes: { hidden: cfg.hiddenSize, encoder_hidden: cfg.encoderHiddenSize },
  });
  const { hidden } = buildBlip2QFormer(g, weights, cfg, { queryEmbeds, encoderHiddenStates }, options);
  g.output(hidden, QFORMER_IO.hidden, ['batch', 'num_queries', cfg.hiddenSize]);
  applyComputeDtype(g, options.computeDtype);
  return g;
}

/**
 * HF: Blip2QFormerLayer.forward with query_length == the sequence length
 * (no text tokens): attention -> crossattention (when this layer has it) ->
 * feed_forward_chunk_query.
 */
function qformerLayer(g: Graph, w: Weights, cfg: Blip2QFormerConfig, layer: { index: number; hidden: Value; encoder: Value }): Value {
  const { index, hidden, encoder } = layer;
  let h = module(g, w, 'attention', (aw) => qformerAttention(g, aw, cfg, hidden, undefined));
  if (index % cfg.crossAttentionFrequency === 0) {
    h = module(g, w, 'crossattention', (cw) => qformerAttention(g, cw, cfg, h, encoder));
  }
  return feedForwardChunkQuery(g, w, cfg, h);
}

/** HF: Blip2QFormerAttention: multi-head attention, then Blip2QFormerSelfOutput (dense, residual, LayerNorm). */
function qformerAttention(g: Graph, w: Weights, cfg: Blip2QFormerConfig, hidden: Value, encoder: Value | undefined): Value {
  const context = module(g, w, 'attention', (mw) => qformerMultiHeadAttention(g, mw, cfg, hidden, encoder));
  return module(g, w, 'output', (ow) => selfOutput(g, ow, cfg, { x: context, residual: hidden, inDim: cfg.hiddenSize }));
}

/**
 * HF: Blip2QFormerMultiHeadAttention: query from the hidden states; key and
 * value from the encoder states (cross-attention) or the hidden states;
 * softmax(q k^T / sqrt(head_dim)) v over all keys (no mask, not causal).
 */
function qformerMultiHeadAttention(g: Graph, w: Weights, cfg: Blip2QFormerConfig, hidden: Value, encoder: Value | undefined): Value {
  const h = cfg.hiddenSize;
  const kvIn = encoder === undefined ? h : cfg.encoderHiddenSize;
  const source = encoder ?? hidden;
  const q = nn.linear(g, hidden, w, 'query', { in: h, out: h });
  const k = nn.linear(g, source, w, 'key', { in: kvIn, out: h });
  const v = nn.linear(g, source, w, 'value', { in: kvIn, out: h });
  const headDim = h / cfg.numAttentionHeads;
  return g.multiHeadAttention(q, k, v, { numHeads: cfg.numAttentionHeads, scale: 1 / Math.sqrt(headDim) }).out;
}

/** HF: Blip2QFormerSelfOutput / Blip2QFormerOutput: LayerNorm(dense(x) + residual); the dropout is the identity. */
function selfOutput(g: Graph, w: Weights, cfg: Blip2QFormerConfig, args: { x: Value; residual: Value; inDim: number }): Value {
  const { x, residual, inDim } = args;
  const y = nn.linear(g, x, w, 'dense', { in: inDim, out: cfg.hiddenSize });
  return nn.layerNorm(g, g.add(y, residual), w, 'LayerNorm', cfg.layerNormEps);
}

/** HF: Blip2QFormerLayer.feed_forward_chunk_query: intermediate_query (dense -> act) -> output_query. */
function feedForwardChunkQuery(g: Graph, w: Weights, cfg: Blip2QFormerConfig, x: Value): Value {
  const inter = module(g, w, 'intermediate_query', (iw) =>
    activation(g, nn.linear(g, x, iw, 'dense', { in: cfg.hiddenSize, out: cfg.intermediateSize }), cfg),
  );
  return module(g, w, 'output_query', (ow) => selfOutput(g, ow, cfg, { x: inter, residual: x, inDim: cfg.intermediateSize }));
}

/** HF ACT2FN[hidden_act]: "gelu" is the exact erf GELU; gelu_new / gelu_pytorch_tanh the tanh approximation. */
function activation(g: Graph, x: Value, cfg: Blip2QFormerConfig): Value {
  switch (cfg.hiddenAct) {
    case 'gelu':
      return g.gelu(x, 'none');
    case 'gelu_new':
    case 'gelu_pytorch_tanh':
      return g.gelu(x, 'tanh');
    case 'quick_gelu':
      return g.quickGelu(x);
    case 'relu':
      return g.relu(x);
    case 'silu':
      return g.silu(x);
  }
}

/** Enters a reference module: its node scope and its parameter view together. */
function module<T>(g: Graph, w: Weights, name: string, fn: (w: Weights) => T): T {
  return g.scope(name, () => fn(w.sub(name)));
}

function checkInputs(inputs: Blip2QFormerInputs, cfg: Blip2QFormerConfig): void {
  const floats = ['float32', 'float16', 'bfloat16'];
  const check = (v: Value | undefined, key: string, width: number): void => {
    if (v === undefined) throw new QFormerError('BAD_INPUT', `Q-Former: ${key} is required`);
    if (!floats.includes(v.dtype)) throw new QFormerError('BAD_INPUT', `Q-Former: ${key} must be a float tensor, got ${v.toString()}`);
    const last = v.shape[2];
    if (v.rank !== 3 || (typeof last === 'number' && last !== width)) {
      throw new QFormerError('BAD_INPUT', `Q-Former: ${key} must be [batch, length, ${width}], got ${v.toString()}`);
    }
  };
  check(inputs.queryEmbeds, 'queryEmbeds', cfg.hiddenSize);
  check(inputs.encoderHiddenStates, 'encoderHiddenStates', cfg.encoderHiddenSize);
  if (inputs.queryEmbeds.dtype !== inputs.encoderHiddenStates.dtype) {
    throw new QFormerError(
      'BAD_INPUT',
      `Q-Former: queryEmbeds (${inputs.queryEmbeds.dtype}) and encoderHiddenStates (${inputs.encoderHiddenStates.dtype}) must have one dtype`,
    );
  }
  const [b1, b2] = [inputs.queryEmbeds.shape[0], inputs.encoderHiddenStates.shape[0]];
  if (typeof b1 === 'number' && typeof b2 === 'number' && b1 !== b2) {
    throw new QFormerError('BAD_INPUT', `Q-Former: queryEmbeds and encoderHiddenStates have different batch sizes (${b1} vs ${b2})`);
  }
}
