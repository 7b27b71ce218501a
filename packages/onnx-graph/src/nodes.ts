import type { OnnxTypes } from './proto.js';

/**
 * Every node of `nodes` and of their subgraphs (If branches, Loop bodies), depth first, each node before its
 * bodies' nodes: what a node count of a graph with control flow has to walk.
 */
export function* everyNode(nodes: readonly OnnxTypes.INodeProto[]): Generator<OnnxTypes.INodeProto> {
  for (const node of nodes) {
    yield node;
    for (const a of node.attribute ?? []) if (a.g) yield* everyNode(a.g.node ?? []);
  }
}
