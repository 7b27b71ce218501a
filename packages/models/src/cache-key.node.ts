// What a graph-cache key (graph-cache.ts) is made of.
// The key reads no weight bytes: the graph as the builders wrote it (nodes, initializer descriptions and where
// each lies), the passes it is to be rewritten with (by name and options, and the code of onnx-graph that runs
// them), and each input file's stamp (size, mtime, ctime, inode, device). The passes run only when the graph is
// written, so a cached load skips them. ctime changes on every write and cannot be set back,
// so a checkpoint changed or replaced in place (`cp -p`, same size and mtime) gets another key and is built
// again, never served another checkpoint's graph; a copy of a checkpoint elsewhere is built again too.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deferredPassKey, type Graph } from '@vlmkit/onnx-graph';

/**
 * Bumped when the key, the entry format or what is stored changes: older entries then no longer match and are
 * cleaned. 5: weights referenced in the checkpoint, the key on input files' stamps (docs/graph-cache.md). 6:
 * locations written relative to the entry's `folder` at build, so that a load serves the bytes as stored. 7: the
 * key on the graph before its passes (`deferPasses`), which a cached load then skips.
 */
export const FORMAT = 8;

/** A graph as its key sees it: a digest of its description, and the files its initializers read (realpath). */
export interface GraphDescription {
  digest: string;
  files: string[];
}

/** Graphs whose deferred passes `get` ran, with their description from before. */
export const rewritten = new WeakMap<Graph, GraphDescription>();

/** `g` as built (nodes, inputs, outputs, initializers and where each lies) and the passes waiting on it. */
export async function describe(g: Graph): Promise<GraphDescription> {
  const snap = g.snapshot();
  const h = createHash('sha256');
  h.update(JSON.stringify({ format: FORMAT, name: snap.name, opset: snap.opset, domains: snap.domains, nodes: snap.nodes }));
  h.update(JSON.stringify([...snap.inputs, ...snap.outputs].map((v) => [v.name, v.dtype, v.shape])));
  h.update(`passes:${deferredPassKey(g)}:${passesCode()}`);
  // The nodes already differ per compute dtype (casts, input types); stated too, so no two dtypes can share a key.
  if (g.computeDtype !== 'float32') h.update(`compute-dtype:${g.computeDtype}`);
  // Thousands of initializers lie in a few files: each path resolved once.
  const real = new Map<string, Promise<string>>();
  for (const { name, ref } of snap.initializers) {
    let where: unknown = ref.kind;
    if (ref.kind === 'file') {
      if (!real.has(ref.path)) real.set(ref.path, realpath(ref.path));
      where = [await real.get(ref.path), ref.byteOffset, ref.byteLength];
    } else if (ref.kind === 'source') {
      // Read through a ByteSource (a URL, a Blob): keyed by where and which version of the file, as a path by its stamp.
      where = [ref.kind, ref.source.name, ref.source.stamp, ref.byteOffset, ref.byteLength];
    }
    h.update(JSON.stringify([name, ref.dtype, ref.shape, where]));
  }
  const files = [...new Set(await Promise.all(real.values()))].sort();
  return { digest: h.digest('hex'), files };
}

let code: string | undefined;
/**
 * A digest of @vlmkit/onnx-graph's code: the passes a key names run there, so another version of them (which
 * may write another graph from the same input) gets another key.
 */
function passesCode(): string {
  if (code === undefined) {
    const dist = dirname(fileURLToPath(import.meta.resolve('@vlmkit/onnx-graph')));
    const h = createHash('sha256');
    const walk = (dir: string) => {
      for (const d of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
        const path = join(dir, d.name);
        if (d.isDirectory()) walk(path);
        else if (d.name.endsWith('.js')) h.update(`${relative(dist, path)}\0`).update(readFileSync(path));
      }
    };
    walk(dist);
    code = h.digest('hex').slice(0, 16);
  }
  return code;
}
