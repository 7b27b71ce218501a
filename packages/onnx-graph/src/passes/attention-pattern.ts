import type { Graph } from '../graph.js';
import type { OnnxTypes } from '../proto.js';
import { Value } from '../value.js';
import { attrNumber, type NodeIndex, type PassBody } from './rewrite.js';

type Node = OnnxTypes.INodeProto;

/**
 * A decoder self-attention as the builders write it (moe-decoder `selfAttention`): opset-23 Attention on
 * 3-D q/k/v [B, S, H*hd] with a bool mask and a KV cache (past key / value [B, Hkv, P, hd]).
 */
export interface OpAttention {
  node: Node;
  q: string;
  k: string;
  v: string;
  mask: string;
  pastKey: string;
  pastValue: string;
  numHeads: number;
  kvNumHeads: number;
  headDim: number;
  scale: number;
  /** The op's outputs: Y, then present key / value. */
  out: string;
  presentKey: string;
  presentValue: string;
}

/** `node` as an `OpAttention`, or undefined when it is another form (4-D, no cache, float mask, causal flag). */
export function opAttention(body: PassBody, node: Node): OpAttention | undefined {
  if (node.opType !== 'Attention' || (node.domain ?? '') !== '') return undefined;
  const [q, k, v, mask, pastKey, pastValue] = node.input ?? [];
  const [out, presentKey, presentValue] = node.output ?? [];
  if (!q || !k || !v || !mask || !pastKey || !pastValue || !out || !presentKey || !presentValue) return undefined;
  const qType = body.graph.typeOf(q);
  const qWidth = qType?.shape[2];
  if (qType?.shape.length !== 3 || typeof qWidth !== 'number' || body.graph.typeOf(mask)?.dtype !== 'bool') return undefined;
  if (attrNumber(node, 'is_causal', 0) !== 0 || attrNumber(node, 'softcap', 0) !== 0) return undefined;
  const numHeads = attrNumber(node, 'q_num_heads', 0);
  const kvNumHeads = attrNumber(node, 'kv_num_heads', 0);
  if (numHeads <= 0 || kvNumHeads <= 0 || numHeads % kvNumHeads !== 0) return undefined;
  const headDim = qWidth / numHeads;
  const scale = attrNumber(node, 'scale', headDim ** -0.5);
  return { node, q, k, v, mask, pastKey, pastValue, numHeads, kvNumHeads, headDim, scale, out, presentKey, presentValue };
}

/**
 * A builder whose nodes a pass inserts: ops called on it emit into its own node list (`nodes`), with names
 * claimed in the model's name space; constants go to the model's initializers. Values of the body being
 * rewritten are read through `value`.
 */
export class PassBuilder {
  private readonly g: Graph;

  constructor(body: PassBody) {
    this.g = body.graph.subgraph('pass');
  }

  /** The body's value `name` (made by the builder that built the model) as an operand; undefined if unknown. */
  value(name: string): Value | undefined {
    const t = this.g.typeOf(name);
    return t === undefined ? undefined : new Value(this.g, name, t.dtype, [...t.shape]);
  }

  /** Runs `fn` with the nodes it emits named in `scope` (a dotted path, as `scopeOf` gives). */
  build<T>(scope: string, fn: (g: Graph) => T): T {
    return scope === '' ? fn(this.g) : this.g.scope(scope, () => fn(this.g));
  }

  /** The nodes emitted so far, each value of `renames` renamed (so the nodes after the pattern keep reading their names). */
  nodes(renames: readonly (readonly [Value, string])[] = []): Node[] {
    const map = new Map(renames.map(([v, name]) => [v.name, name]));
    const rename = (n: string) => map.get(n) ?? n;
    return this.g.nodes.map((n) => ({ ...n, input: (n.input ?? []).map(rename), output: (n.output ?? []).map(rename) }));
  }
}

/** The scope a node or value name was made in (`decoder.layers.0.self_attn.attn` for `decoder.layers.0.self_attn.attn.Attention`). */
export function scopeOf(name: string | null | undefined): string {
  const dot = (name ?? '').lastIndexOf('.');
  return dot < 0 ? '' : name!.slice(0, dot);
}

/** `name`'s producer when it is a Cast read by `reader` alone (the pattern may drop it), else undefined. */
export function castOnlyFor(index: NodeIndex, name: string, reader: Node): Node | undefined {
  const p = index.producer(name);
  return p?.opType === 'Cast' && (p.domain ?? '') === '' && index.onlyReadBy(name, reader) ? p : undefined;
}

/**
 * What the rewrites of one body share (contrib_attention.*: the rotary caches, the bias): made by the first
 * rewrite that needs them, kept only once that rewrite is committed.
 */
export class SharedInputs {
  private readonly made = new Map<string, string[]>();
  private pending: string[] = [];

  /** The values under `key` as operands of `b`, made by `make` on first use (kept once the rewrite is committed). */
  get(key: string, b: PassBuilder, make: () => Value[]): Value[] {
    const hit = this.made.get(key);
    if (hit !== undefined) return hit.map((name) => b.value(name)!);
    const vs = make();
    this.made.set(
      key,
      vs.map((v) => v.name),
    );
    this.pending.push(key);
    return vs;
  }

  settle(committed: boolean): void {
    if (!committed) for (const key of this.pending) this.made.delete(key);
    this.pending = [];
  }
}
