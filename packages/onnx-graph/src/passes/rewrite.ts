import type { Graph } from '../graph.js';
import { type Attr, toAttribute } from '../graph-core.js';
import type { OnnxTypes } from '../proto.js';

type Node = OnnxTypes.INodeProto;

/**
 * A rewrite over a built graph (onnxscript's rewriter): a pattern found in a body's nodes and replaced by
 * nodes that compute the same values. Builders write the math; passes make it fast. A pass never changes what
 * the graph's outputs hold beyond float rounding: each has a test running the graph before and after.
 */
export interface GraphPass {
  /** Stable name: written into load reports and profile tables. */
  readonly name: string;
  /** What besides `name` decides what the pass writes (its options); part of a cache key taken before passes run. */
  readonly key?: string;
  /** Rewrites `body` in place; returns how many rewrites it made. */
  run(body: PassBody): number;
}

/** One graph's nodes as a pass sees them: the root graph or a Loop / If body inside it. */
export interface PassBody {
  /** The nodes in execution order; edit only through `replaceNodes`. */
  readonly nodes: Node[];
  /** Names this body returns (its graph outputs): a rewrite must keep producing them. */
  readonly outputs: ReadonlySet<string>;
  /** The model being rewritten: value types, fresh names, initializers, domains. */
  readonly graph: Graph;
}

/**
 * Runs `passes` in order over the root graph and every body nested in it, then drops the initializers no node
 * reads any more; returns the rewrites per pass.
 */
export function applyPasses(g: Graph, passes: readonly GraphPass[]): Record<string, number> {
  if (deferring > 0) {
    deferred.set(g, [...(deferred.get(g) ?? []), ...passes]);
    return {};
  }
  const counts: Record<string, number> = {};
  const rootOutputs = new Set(g.snapshot().outputs.map((v) => v.name));
  for (const pass of passes) {
    let n = 0;
    const visit = (nodes: Node[], outputs: ReadonlySet<string>) => {
      n += pass.run({ nodes, outputs, graph: g });
      for (const node of nodes) {
        for (const a of node.attribute ?? []) {
          if (!a.g) continue;
          a.g.node ??= [];
          visit(a.g.node, new Set((a.g.output ?? []).map((o) => o.name ?? '')));
        }
      }
    };
    visit(g.nodes, rootOutputs);
    counts[pass.name] = (counts[pass.name] ?? 0) + n;
  }
  // A weight a rewrite replaced (by its quantized form) is not written to the model.
  g.pruneInitializers();
  return counts;
}

let deferring = 0;
/** Passes recorded by `applyPasses` while `deferPasses` ran, per graph, in order. */
const deferred = new WeakMap<Graph, GraphPass[]>();

/**
 * Runs `build` with every `applyPasses` call in it recorded on its graph instead of run: a graph cache keys the
 * graph as built plus `deferredPassKey`, and runs the passes (`runDeferredPasses`) only when it has to write
 * the graph. `build` must be synchronous and must not read what a pass would change.
 */
export function deferPasses<T>(build: () => T): T {
  deferring++;
  try {
    return build();
  } finally {
    deferring--;
  }
}

/** The passes waiting on `g` (`deferPasses`), by name and key. */
export function deferredPassKey(g: Graph): string {
  return JSON.stringify((deferred.get(g) ?? []).map((p) => (p.key === undefined ? p.name : [p.name, p.key])));
}

/** Runs the passes waiting on `g`, in the order they were applied; returns the rewrites per pass. */
export function runDeferredPasses(g: Graph): Record<string, number> {
  const passes = deferred.get(g);
  if (passes === undefined) return {};
  deferred.delete(g);
  const outer = deferring;
  deferring = 0;
  try {
    // Run even when empty: applyPasses also drops the initializers no node reads.
    return applyPasses(g, passes);
  } finally {
    deferring = outer;
  }
}

/**
 * Who makes and who reads each value of a body (reads inside a node's subgraphs count as the node's). Kept in
 * step by `replaceNodes`, so a pass's many rewrites of one body do not each rebuild it.
 */
export class NodeIndex {
  private readonly producers = new Map<string, Node>();
  private readonly readers = new Map<string, Node[]>();
  /** The names each node reads, walked once (its subgraphs included: a rewrite leaves them as they are). */
  private readonly reads = new Map<Node, Set<string>>();

  constructor(readonly body: PassBody) {
    for (const node of body.nodes) this.add(node);
  }

  /** The node making `name` in this body, or undefined (a graph input, an initializer, an outer value). */
  producer(name: string): Node | undefined {
    return this.producers.get(name);
  }

  /** The position of `node` in the body (-1 when it is not in it). */
  position(node: Node): number {
    return this.body.nodes.indexOf(node);
  }

  /** The nodes reading `name`. */
  readersOf(name: string): readonly Node[] {
    return this.readers.get(name) ?? [];
  }

  /** `name` is read by `node` alone and is not a body output: the node may absorb its producer. */
  onlyReadBy(name: string, node: Node): boolean {
    const r = this.readersOf(name);
    return r.length === 1 && r[0] === node && !this.body.outputs.has(name);
  }

  /** `name` is read by anything or returned by the body. */
  isUsed(name: string): boolean {
    return this.readersOf(name).length > 0 || this.body.outputs.has(name);
  }

  /** Takes in `replaceNodes`' edit of the body: `remove` gone, `insert` in. */
  replaced(remove: ReadonlySet<Node>, insert: readonly Node[]): void {
    for (const node of remove) {
      for (const o of node.output ?? []) if (this.producers.get(o) === node) this.producers.delete(o);
      for (const name of this.reads.get(node) ?? []) {
        const list = this.readers.get(name)?.filter((r) => r !== node) ?? [];
        if (list.length > 0) this.readers.set(name, list);
        else this.readers.delete(name);
      }
      this.reads.delete(node);
    }
    for (const node of insert) this.add(node);
  }

  private add(node: Node): void {
    for (const o of node.output ?? []) if (o !== '') this.producers.set(o, node);
    const reads = namesRead(node);
    this.reads.set(node, reads);
    for (const name of reads) {
      const list = this.readers.get(name);
      if (list === undefined) this.readers.set(name, [node]);
      else if (!list.includes(node)) list.push(node);
    }
  }
}

/**
 * Replaces the `remove` nodes by `insert` (in that order), placed where the first removed node was, or as
 * near it as the order allows: after every value the inserted nodes read is made, before every kept node that
 * reads what they make. Refused (false, nothing changed) when no such place exists, when an inserted node
 * reads a removed node's output, or when a removed node's output still read or returned is not made again.
 */
export function replaceNodes(index: NodeIndex, remove: readonly Node[], insert: readonly Node[]): boolean {
  const { body } = index;
  const removed = new Set(remove);
  const made = new Set<string>();
  let earliest = 0;
  for (const node of insert) {
    for (const name of namesRead(node)) {
      const p = made.has(name) ? undefined : index.producer(name);
      if (p === undefined) continue;
      if (removed.has(p)) return false;
      earliest = Math.max(earliest, index.position(p) + 1);
    }
    for (const o of node.output ?? []) if (o !== '') made.add(o);
  }
  let latest = body.nodes.length;
  for (const o of made) for (const r of index.readersOf(o)) if (!removed.has(r)) latest = Math.min(latest, index.position(r));
  if (earliest > latest) return false;
  for (const node of remove) {
    for (const o of node.output ?? []) {
      if (o === '' || made.has(o)) continue;
      const stillRead = index.readersOf(o).some((r) => !removed.has(r)) || body.outputs.has(o);
      if (stillRead) return false;
    }
  }
  const first = Math.min(...remove.map((n) => index.position(n)));
  const at = Math.min(Math.max(first, earliest), latest);
  const kept = body.nodes.filter((n) => !removed.has(n));
  const before = body.nodes.slice(0, at).filter((n) => !removed.has(n)).length;
  kept.splice(before, 0, ...insert);
  body.nodes.splice(0, body.nodes.length, ...kept);
  index.replaced(removed, insert);
  for (const node of insert) body.graph.useDomain(node.domain ?? '');
  return true;
}

/**
 * `root` and the nodes that exist only to feed it: a producer joins when every output it makes is read by joined
 * nodes alone, is not returned by the body and is not in `keep` (the values a replacement will read). What a
 * pass replacing `root`'s result by another computation removes with it, so no dead node stays behind.
 */
export function feedersOf(index: NodeIndex, root: Node, keep: ReadonlySet<string>): Node[] {
  const cone = new Set<Node>([root]);
  const onlyFeedsCone = (p: Node) =>
    (p.output ?? []).every((o) => o === '' || (!keep.has(o) && !index.body.outputs.has(o) && index.readersOf(o).every((r) => cone.has(r))));
  for (let grew = true; grew; ) {
    grew = false;
    for (const node of [...cone]) {
      for (const name of namesRead(node)) {
        const p = index.producer(name);
        if (p === undefined || cone.has(p) || !onlyFeedsCone(p)) continue;
        cone.add(p);
        grew = true;
      }
    }
  }
  return index.body.nodes.filter((n) => cone.has(n));
}

/**
 * Runs `match` on each node in order; a match returns true after it rewrote the body (`replaceNodes`, which
 * keeps the index in step), and the walk starts again from the first node. Returns the number of rewrites.
 */
export function rewriteEach(body: PassBody, match: (node: Node, index: NodeIndex) => boolean): number {
  let count = 0;
  const index = new NodeIndex(body);
  for (let i = 0; i < body.nodes.length; i++) {
    const node = body.nodes[i]!;
    if (match(node, index)) {
      count++;
      i = -1;
    }
  }
  return count;
}

/** A node for a pass to insert, its attributes written as the builder writes them. */
export function makeNode(
  opType: string,
  inputs: readonly string[],
  outputs: readonly string[],
  opts: { name: string; domain?: string; attrs?: Record<string, Attr | undefined> },
): Node {
  const attribute: OnnxTypes.IAttributeProto[] = [];
  for (const [key, a] of Object.entries(opts.attrs ?? {})) if (a !== undefined) attribute.push(toAttribute(key, a));
  let last = inputs.length;
  while (last > 0 && inputs[last - 1] === '') last--;
  return { opType, name: opts.name, domain: opts.domain ?? '', input: inputs.slice(0, last), output: [...outputs], attribute };
}

/** The attribute `name` of `node` as a number (ints and floats), or `fallback`. */
export function attrNumber(node: Node, name: string, fallback: number): number {
  const a = node.attribute?.find((x) => x.name === name);
  if (a === undefined) return fallback;
  return a.f !== undefined && a.f !== null && a.type === 1 ? a.f : Number(a.i ?? fallback);
}

/** Names `node` reads: its inputs and the outer-scope names its subgraphs read. */
function namesRead(node: Node): Set<string> {
  const names = new Set<string>();
  for (const i of node.input ?? []) if (i !== '') names.add(i);
  for (const a of node.attribute ?? []) if (a.g) for (const name of outerReads(a.g)) names.add(name);
  return names;
}

/** Names a subgraph reads but does not make itself (outer-scope values). */
function outerReads(g: OnnxTypes.IGraphProto): Set<string> {
  const own = new Set<string>([...(g.input ?? []).map((v) => v.name ?? ''), ...(g.initializer ?? []).map((t) => t.name ?? '')]);
  const reads = new Set<string>();
  for (const node of g.node ?? []) {
    for (const name of namesRead(node)) if (!own.has(name)) reads.add(name);
    for (const o of node.output ?? []) own.add(o);
  }
  return reads;
}
