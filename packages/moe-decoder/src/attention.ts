import { type Graph, nn, type Value, type Weights } from '@vlmkit/onnx-graph';
import { type ContribAttentionInputs, contribAttention } from './attention-contrib.js';
import type { KvCacheMode, KvPair } from './types.js';

/**
 * What a decoder's self-attention module is built with (vLLM: the
 * constructor arguments of Ernie4_5_VLMoeAttention and GraniteAttention).
 * The sizes are named as in both text configs, so a config spreads in; the
 * rest is each model's choice, stated in its `attention.ts`.
 */
export interface SelfAttentionConfig {
  hiddenSize: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
  /** qkv_proj has a bias (vLLM: `qkv_bias` / `attention_bias`). */
  qkvBias: boolean;
  /** o_proj has a bias. */
  oProjBias: boolean;
  /** Softmax scale (vLLM: `self.scaling`). */
  scaling: number;
  /** vLLM `is_neox_style`: true rotates halves (GPT-NeoX), false rotates (even, odd) pairs (GPT-J). */
  isNeoxStyle: boolean;
  /**
   * In 16-bit compute, rotate q and k in float32 with float32 tables and round back (HF ERNIE's
   * `q.float() * cos`); false: the tables are cast to the compute dtype and q, k rotated in it (HF Granite's
   * `cos.to(x.dtype)`). The same in float32 compute.
   */
  rotaryInFloat32: boolean;
}

/** One decoder step's inputs to a self-attention module. */
export interface SelfAttentionInputs {
  /** [B, S, D]: the module's input (a decoder layer takes its own input here and passes input_layernorm's output on). */
  hidden: Value;
  /** Rotary tables [B, S, headDim/2] float32, the same for every layer (laid out for `isNeoxStyle`); see `rotaryInFloat32`. */
  cos: Value;
  sin: Value;
  /** bool [B, 1, S, T], true = attend (`causalPaddingMask`). */
  mask: Value;
  /** The layer's cache [B, Hkv, P, headDim] (P may be 0); with it `present` [B, Hkv, P+S, headDim] is returned. */
  past?: KvPair;
  /**
   * 'append': `past` is a slot buffer [B, Hkv, C, headDim] that `mask` [B, 1, S, C + S] selects from, and
   * `present` is the new positions only, [B, Hkv, S, headDim] (see `KvCacheMode`). Default 'concat'.
   */
  kvCache?: KvCacheMode;
  /**
   * Build with com.microsoft fused ops (a decoder built with `ops: 'contrib'`): rotary and attention read
   * these shared inputs (`contribAttentionInputs`) instead of `cos`/`sin`/`mask`. Default: the opset-23 ops.
   */
  contrib?: ContribAttentionInputs;
}

export interface SelfAttentionOutputs {
  /** [B, S, D]. */
  out: Value;
  /** Past + current keys and values ('append': the current ones only); only when `past` was given. */
  present: KvPair | undefined;
}

/** Query-row blocks of a long prompt's attention (4: 300 -> 195 ms for 8 layers of 1280 positions; 8: 190 ms). */
const PROMPT_CHUNKS = 4;
/** The shortest prompt run in blocks (32 rows per block at least; below, the extra nodes outweigh the saving). */
const CHUNKED_PROMPT_ROWS = 128;

/**
 * Decoder self-attention in vLLM's forward order (Ernie4_5_VLMoeAttention,
 * GraniteAttention): packed qkv_proj (q rows, then k, then v), split, rotary
 * on q and k, GQA attention over past + current keys, o_proj. `w` is
 * relative to the module (`layers.3.self_attn`).
 */
export function selfAttention(g: Graph, w: Weights, config: SelfAttentionConfig, inputs: SelfAttentionInputs): SelfAttentionOutputs {
  const { hiddenSize: D, numAttentionHeads: hq, numKeyValueHeads: hkv, headDim: hd, isNeoxStyle } = config;
  const { cos, sin, past } = inputs;
  const qkv = nn.linear(g, inputs.hidden, w, 'qkv_proj', { bias: config.qkvBias, in: D, out: (hq + 2 * hkv) * hd });
  const [q0, k0, v] = g.split(qkv, [hq * hd, hkv * hd, hkv * hd], -1);
  if (inputs.contrib !== undefined) {
    const args = { q: q0!, k: k0!, v: v!, past, numHeads: hq, kvNumHeads: hkv, headDim: hd, scale: config.scaling };
    const r = contribAttention(g, inputs.contrib, { ...args, interleaved: !isNeoxStyle });
    const out = nn.linear(g, r.out, w, 'o_proj', { bias: config.oProjBias, in: hq * hd, out: D });
    return { out, present: presentOf(g, { k: r.k, v: v!, hkv, hd }, r.presentKey, r.presentValue, inputs.kvCache) };
  }
  // ONNX RotaryEmbedding's `interleaved` is vLLM's not-neox (GPT-J) layout.
  const rotary = (x: Value, numHeads: number) =>
    g.scope('rotary_emb', () => {
      const dt = config.rotaryInFloat32 ? 'float32' : x.dtype;
      const y = g.rotaryEmbedding(g.cast(x, dt), g.cast(cos, dt), g.cast(sin, dt), { interleaved: !isNeoxStyle, numHeads });
      return g.cast(y, x.dtype);
    });
  const [q, k] = [rotary(q0!, hq), rotary(k0!, hkv)];
  const opAttention = (b: Graph) =>
    b.scope('attn', () =>
      b.attention(q, k, v!, {
        qNumHeads: hq,
        kvNumHeads: hkv,
        scale: config.scaling,
        mask: inputs.mask,
        // A cache fed in another float dtype (bfloat16 compute, float32 IO: kv-io.ts) is cast in.
        ...(past !== undefined ? { pastKey: b.cast(past.key, k.dtype), pastValue: b.cast(past.value, k.dtype) } : {}),
      }),
    );
  if (inputs.kvCache === 'append' && past !== undefined && q.dtype === 'float32') {
    // A decode step (one new position per row) reads the slot cache in place (`nn.stepAttention`); a prompt of
    // at least CHUNKED_PROMPT_ROWS positions runs in PROMPT_CHUNKS causal blocks of query rows, each against
    // the keys it can see (`nn.causalChunkedAttention`: 8 layers of 1280 positions 300 -> 195 ms); shorter
    // prompts take the op. 16-bit graphs keep the op: its kernels accumulate in float32.
    const sizes = { numHeads: hq, kvNumHeads: hkv, headDim: hd, scale: config.scaling };
    const rows = (b: Graph) => b.shapeOf(q, 1, 2);
    const rowsAre = (b: Graph, test: 'equal' | 'greaterOrEqual', n: number) =>
      b.squeeze(b[test](rows(b), b.constant('int64', [1], [n])), [0]);
    const [attended] = g.if(
      rowsAre(g, 'equal', 1),
      (b) => [nn.stepAttention(b, q, k, v!, past, inputs.mask, sizes)],
      (b) =>
        b.if(
          rowsAre(b, 'greaterOrEqual', CHUNKED_PROMPT_ROWS),
          (c) => [nn.causalChunkedAttention(c, q, k, v!, past, inputs.mask, sizes, PROMPT_CHUNKS)],
          (c) => [opAttention(c).out],
        ),
    );
    const out = nn.linear(g, attended!, w, 'o_proj', { bias: config.oProjBias, in: hq * hd, out: D });
    return { out, present: appendedRows(g, k, v!, hkv, hd) };
  }
  const r = opAttention(g);
  const out = nn.linear(g, r.out, w, 'o_proj', { bias: config.oProjBias, in: hq * hd, out: D });
  return { out, present: presentOf(g, { k, v: v!, hkv, hd }, r.presentKey, r.presentValue, inputs.kvCache) };
}

/**
 * The layer's `present`: 'concat' the op's past + current [B, Hkv, P+S, hd]; 'append' the new rows only, as the
 * cache lays them out (the op's own past + current, an internal copy, stays in the graph). Undefined without a past.
 */
function presentOf(
  g: Graph,
  cur: { k: Value; v: Value; hkv: number; hd: number },
  presentKey: Value | undefined,
  presentValue: Value | undefined,
  kvCache: KvCacheMode | undefined,
): KvPair | undefined {
  if (presentKey === undefined) return undefined;
  if (kvCache === 'append') return appendedRows(g, cur.k, cur.v, cur.hkv, cur.hd);
  return { key: presentKey, value: presentValue! };
}

/** 'append' `present`: the new positions' keys and values [B, S, Hkv*hd] as cache rows [B, Hkv, S, hd]. */
function appendedRows(g: Graph, k: Value, v: Value, hkv: number, hd: number): KvPair {
  const heads = (x: Value) => g.transpose(g.reshape(x, [0, 0, hkv, hd]), [0, 2, 1, 3]);
  return g.scope('present', () => ({ key: heads(k), value: heads(v) }));
}
