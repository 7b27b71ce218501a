/**
 * Which execution provider runs each node. ORT decides when the session is created and says so only in
 * its verbose log (session_state.cc `VerifyEachNodeIsAssignedToAnEp`: a "Node placements" block, one
 * header per provider, then one line per node, subgraphs included, when the graph is split; see HEADER
 * and NODE). onnxruntime-node writes that log to the process's own stderr, so `nodePlacement`
 * (placement.node.ts) creates the session in a child Node process and this file parses what it printed.
 */
import type { NodeDevice } from './device.js';
import type { GraphOptimizationLevel } from './session.js';

export interface PlacedNode {
  opType: string;
  name: string;
}

export interface ProviderNodes {
  /** ORT's provider name, e.g. 'CUDAExecutionProvider'. */
  provider: string;
  count: number;
  /** The nodes, when ORT lists them (it does only when the graph is split over several providers). */
  nodes: PlacedNode[];
}

/** One session's placement: the providers in the order ORT printed them. */
export interface NodePlacement {
  providers: ProviderNodes[];
}

const TAG = 'VerifyEachNodeIsAssignedToAnEp]';
const HEADER = /^\s*(?:All nodes|Node\(s\)) placed on \[([^\]]+)\]\. Number of nodes: (\d+)\s*$/;
const NODE = /^ {2}(\S+) \((.*)\)\s*$/;

/** Every "Node placements" block in an ORT verbose log (one per session created). */
export function parseNodePlacements(log: string): NodePlacement[] {
  const blocks: NodePlacement[] = [];
  let current: NodePlacement | undefined;
  for (const line of log.split('\n')) {
    const at = line.indexOf(TAG);
    if (at < 0) continue;
    // The message follows the tag and one space; node lines keep their own two-space indent.
    const msg = line.slice(at + TAG.length + 1).replace(/\r$/, '');
    if (msg.trim() === 'Node placements') {
      current = { providers: [] };
      blocks.push(current);
      continue;
    }
    if (current === undefined) continue;
    const header = HEADER.exec(msg);
    if (header) {
      current.providers.push({ provider: header[1]!, count: Number(header[2]), nodes: [] });
      continue;
    }
    const node = NODE.exec(msg);
    const last = current.providers.at(-1);
    if (node && last) last.nodes.push({ opType: node[1]!, name: node[2]! });
  }
  for (const b of blocks) {
    for (const p of b.providers) {
      if (p.nodes.length !== 0 && p.nodes.length !== p.count) {
        throw new Error(`ORT log: ${p.provider} announces ${p.count} nodes but lists ${p.nodes.length}`);
      }
    }
  }
  return blocks;
}

/** How many nodes of each op type, most frequent first. */
export function opTypeCounts(nodes: readonly PlacedNode[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const n of nodes) counts.set(n.opType, (counts.get(n.opType) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/**
 * One line per provider, e.g.
 * `CUDAExecutionProvider 530 nodes (MemcpyToHost 2)` and `CPUExecutionProvider 10 nodes: Shape 6, Gather 4`:
 * the CPU ones by op type, and on other providers the Memcpy nodes ORT inserted (each is a device/host copy).
 */
export function formatPlacement(p: NodePlacement): string[] {
  return p.providers.map(({ provider, count, nodes }) => {
    const head = `${provider} ${count} node${count === 1 ? '' : 's'}`;
    if (provider === 'CPUExecutionProvider') {
      if (nodes.length === 0) return head;
      return `${head}: ${opTypeCounts(nodes)
        .map(([op, n]) => `${op} ${n}`)
        .join(', ')}`;
    }
    const copies = opTypeCounts(nodes.filter((n) => n.opType.startsWith('Memcpy')));
    return copies.length === 0 ? head : `${head} (${copies.map(([op, n]) => `${op} ${n}`).join(', ')})`;
  });
}

/** ORT's name for each device's execution provider, as its placement log prints it. */
export const EXECUTION_PROVIDERS: Readonly<Record<NodeDevice, string>> = { cpu: 'CPUExecutionProvider', cuda: 'CUDAExecutionProvider' };

/**
 * What did not run where it was asked to: every provider other than `provider` with its nodes (op type
 * and name; ORT lists them whenever the graph is split, so on a split graph none is missing), and the
 * copies ORT inserted between host and device (Memcpy* nodes, on any provider). Empty `others` and
 * `copies`: the whole graph runs on `provider`.
 */
export function offProvider(p: NodePlacement, provider: string): { others: ProviderNodes[]; copies: PlacedNode[] } {
  return {
    others: p.providers.filter((x) => x.provider !== provider),
    copies: p.providers.flatMap((x) => x.nodes.filter((n) => n.opType.startsWith('Memcpy'))),
  };
}

/**
 * One line per node not on `provider` (`CPUExecutionProvider Shape (decoder/layers.0/Shape_3)`), then one per
 * inserted copy; a provider that took the whole graph (ORT lists no nodes then) is one line with its count.
 */
export function formatOffProvider(p: NodePlacement, provider: string): string[] {
  const { others, copies } = offProvider(p, provider);
  const lines = others.flatMap(({ provider: other, count, nodes }) =>
    nodes.length === 0 ? [`${other} all ${count} nodes`] : nodes.map((n) => `${other} ${n.opType} (${n.name})`),
  );
  return [...lines, ...copies.map((n) => `copy ${n.opType} (${n.name})`)];
}

export interface PlacementOptions {
  device: NodeDevice;
  graphOptimizationLevel?: GraphOptimizationLevel;
}
