import type { Graph } from '../graph.js';
import { maskToBias, repeatKvHeads } from '../nn.js';
import type { OnnxTypes } from '../proto.js';
import type { Value } from '../value.js';
import { castOnlyFor, type OpAttention, opAttention, PassBuilder, SharedInputs, scopeOf } from './attention-pattern.js';
import { attrNumber, type GraphPass, type NodeIndex, type PassBody, replaceNodes, rewriteEach } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

/**
 * The com.microsoft attention kernel `contribAttentionPass` writes:
 * - 'mha': MultiHeadAttention over the cache the graph concatenates itself (past + new, as the opset-23 op
 *   does inside), the KV heads repeated for the query heads. Every dtype, every step shape; the only one
 *   ORT's CUDA EP takes in float32.
 * - 'gqa': GroupQueryAttention (the op concatenates the cache, KV heads shared). ORT's CUDA EP registers it for
 *   float16 / bfloat16 only, and ORT's CPU EP refuses batch > 1 with a multi-token step over a nonempty past
 *   (generate never runs one: prefill has no past, decode steps are one token).
 */
export const CONTRIB_ATTENTION_KERNELS = ['mha', 'gqa'] as const;
export type ContribAttentionKernel = (typeof CONTRIB_ATTENTION_KERNELS)[number];

export interface ContribAttentionOptions {
  /** Default by the activations' dtype: 'mha' for float32, 'gqa' for float16 / bfloat16. */
  kernel?: ContribAttentionKernel | undefined;
}

/**
 * A decoder's rotary + attention -> onnxruntime's fused kernels: each opset-23 RotaryEmbedding on q and k
 * becomes com.microsoft RotaryEmbedding, the Attention over the KV cache MultiHeadAttention or
 * GroupQueryAttention (`kernel`). The pattern is what moe-decoder's `selfAttention` writes: RotaryEmbedding
 * on [B, S, H*hd] with per-token tables [B, S, hd/2] (in 16-bit, between Casts), then a 3-D Attention with a
 * bool mask and past key / value.
 *
 * The fused kernels read the tables as a cache indexed by position ids and the mask as an additive bias; these
 * (and GroupQueryAttention's lengths) are made once per body and shared by its layers. Numbers: the fused
 * rotary runs in the activations' dtype (the 16-bit pattern's float32 rotation is not kept); every row counts
 * all T positions as valid for GroupQueryAttention, left padding being masked by the bias (seqlens_k's contract
 * is right padding).
 */
export function contribAttentionPass(options: ContribAttentionOptions = {}): GraphPass {
  return {
    name: `contrib-attention${options.kernel ? `-${options.kernel}` : ''}`,
    run: (body) => {
      const shared = new SharedInputs();
      return rewriteEach(body, (node, index) => {
        const attn = opAttention(body, node);
        return attn !== undefined && rewrite(body, index, attn, shared, options.kernel);
      });
    },
  };
}

/** An opset-23 RotaryEmbedding with the Casts around it (16-bit), read by one attention input. */
interface Rotary {
  /** The activations before the rotary (before the Cast to float32, in 16-bit). */
  x: string;
  /** The tables before any Cast: float32 [B, S, hd/2]. */
  cos: string;
  sin: string;
  interleaved: boolean;
  numHeads: number;
  nodes: Node[];
}

/** The rotary that makes `name` (an attention input), or undefined when `name` is made another way. */
function rotaryOf(body: PassBody, index: NodeIndex, name: string): Rotary | undefined {
  const nodes: Node[] = [];
  let made = index.producer(name);
  if (made?.opType === 'Cast' && (made.domain ?? '') === '') {
    nodes.push(made);
    made = index.producer(made.input![0]!);
    if (made !== undefined && !index.onlyReadBy(made.output![0]!, nodes[0]!)) return undefined;
  }
  // `name` itself may be read elsewhere too (an 'append' cache's new rows): the fused rotary makes it again.
  const rot = made;
  if (rot?.opType !== 'RotaryEmbedding' || (rot.domain ?? '') !== '') return undefined;
  const [x, cos, sin, positionIds] = rot.input ?? [];
  if (!x || !cos || !sin || positionIds || attrNumber(rot, 'rotary_embedding_dim', 0) !== 0) return undefined;
  nodes.push(rot);
  const unwrap = (v: string) => {
    const cast = castOnlyFor(index, v, rot);
    if (cast !== undefined) nodes.push(cast);
    return cast?.input?.[0] ?? v;
  };
  // The activations' Cast in is the pattern's only with the Cast back out (16-bit rotated in float32).
  const r = { x: nodes.length > 1 ? unwrap(x) : x, cos: unwrap(cos), sin: unwrap(sin) };
  // The pattern ends in the dtype it started in; the tables are per token ([B, S, hd/2]).
  if (body.graph.typeOf(r.x)?.dtype !== body.graph.typeOf(name)?.dtype || body.graph.typeOf(r.cos)?.shape.length !== 3) return undefined;
  return { ...r, interleaved: attrNumber(rot, 'interleaved', 0) === 1, numHeads: attrNumber(rot, 'num_heads', 0), nodes };
}

function rewrite(
  body: PassBody,
  index: NodeIndex,
  a: OpAttention,
  shared: SharedInputs,
  kernel: ContribAttentionKernel | undefined,
): boolean {
  const rq = rotaryOf(body, index, a.q);
  const rk = rotaryOf(body, index, a.k);
  if (rq === undefined || rk === undefined || rq.cos !== rk.cos || rq.sin !== rk.sin || rq.interleaved !== rk.interleaved) return false;
  const b = new PassBuilder(body);
  const operands = [rq.x, rk.x, a.v, a.mask, a.pastKey, a.pastValue, rq.cos, rq.sin].map((n) => b.value(n));
  if (operands.some((v) => v === undefined)) return false;
  const [q0, k0, v, mask, pastKey, pastValue, cosTable, sinTable] = operands as Value[];
  const dtype = q0!.dtype;
  const k = kernel ?? (dtype === 'float32' ? 'mha' : 'gqa');
  // Named beside the mask's scope (`decoder.attention_mask.Or` -> `decoder.contrib_attention.*`).
  const outer = scopeOf(scopeOf(index.producer(a.mask)?.name));
  const scope = outer === '' ? 'contrib_attention' : `${outer}.contrib_attention`;
  // contrib_attention.*: the tables cast once to the activations' dtype as the per-token cache, the bias, the lengths.
  const [cos, sin, positionIds] = shared.get(`rotary|${rq.cos}|${rq.sin}|${dtype}`, b, () =>
    b.build(scope, (g) => {
      const c = g.perTokenRotaryCache(g.cast(cosTable!, dtype), g.cast(sinTable!, dtype));
      return [c.cos, c.sin, c.positionIds];
    }),
  );
  const [bias] = shared.get(`bias|${a.mask}|${dtype}`, b, () => b.build(scope, (g) => [maskToBias(g, mask!, dtype)]));
  const lengths = k === 'gqa' ? gqaLengths(b, scope, shared, a.mask, mask!) : undefined;
  const rotary = (x: Value, r: Rotary) =>
    b.build(scopeOf(r.nodes.find((n) => n.opType === 'RotaryEmbedding')?.name), (g) =>
      g.contribRotaryEmbedding(x, positionIds!, { cos: cos!, sin: sin! }, { interleaved: r.interleaved, numHeads: r.numHeads }),
    );
  const [q, key] = [rotary(q0!, rq), rotary(k0!, rk)];
  const x = { q, k: key, v: v!, pastKey: pastKey!, pastValue: pastValue!, bias: bias! };
  const outs = b.build(scopeOf(a.node.name), (g) => (lengths !== undefined ? gqa(g, a, x, lengths) : mha(g, a, x)));
  const renames = [
    [q, a.q],
    [key, a.k],
    [outs.out, a.out],
    [outs.presentKey, a.presentKey],
    [outs.presentValue, a.presentValue],
  ] as const;
  const done = replaceNodes(index, [...rq.nodes, ...rk.nodes, a.node], b.nodes(renames));
  shared.settle(done);
  return done;
}

interface Operands {
  q: Value;
  k: Value;
  v: Value;
  pastKey: Value;
  pastValue: Value;
  bias: Value;
}

type Outs = { out: Value; presentKey: Value; presentValue: Value };

function mha(g: Graph, a: OpAttention, x: Operands): Outs {
  const { kvNumHeads: hkv, headDim: hd } = a;
  const heads = (t: Value) => g.transpose(g.reshape(t, [0, 0, hkv, hd]), [0, 2, 1, 3]); // [B, Hkv, S, hd]
  const key = g.concat([x.pastKey, heads(x.k)], 2);
  const value = g.concat([x.pastValue, heads(x.v)], 2);
  const rep = a.numHeads / hkv;
  const r = g.multiHeadAttention(x.q, repeatKvHeads(g, key, rep), repeatKvHeads(g, value, rep), {
    numHeads: a.numHeads,
    scale: a.scale,
    attentionBias: x.bias,
  });
  return { out: r.out, presentKey: key, presentValue: value };
}

/** GroupQueryAttention's lengths: every row counts all T positions (padding is in the bias), seqlens_k = T - 1. */
function gqaLengths(b: PassBuilder, scope: string, shared: SharedInputs, key: string, mask: Value): { total: Value; seqlensK: Value } {
  const [total, seqlensK] = shared.get(`gqa|${key}`, b, () =>
    b.build(scope, (g) => {
      const t = g.cast(g.squeeze(g.shapeOf(mask, 3, 4), [0]), 'int32');
      return [t, g.expand(g.sub(t, g.scalar(1, 'int32')), g.shapeOf(mask, 0, 1), [mask.dim(0)])];
    }),
  );
  return { total: total!, seqlensK: seqlensK! };
}

function gqa(g: Graph, a: OpAttention, x: Operands, lengths: { total: Value; seqlensK: Value }): Outs {
  const r = g.groupQueryAttentionWithBias(
    x.q,
    x.k,
    x.v,
    { key: x.pastKey, value: x.pastValue },
    { seqlensK: lengths.seqlensK, totalSequenceLength: lengths.total, attentionBias: x.bias },
    { numHeads: a.numHeads, kvNumHeads: a.kvNumHeads, scale: a.scale },
  );
  return { out: r.out, presentKey: r.presentKey, presentValue: r.presentValue };
}
