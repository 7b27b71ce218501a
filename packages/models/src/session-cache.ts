import { createHash } from 'node:crypto';
import { access, constants, mkdir, rename, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Graph, saveModel } from '@vlmkit/onnx-graph';
import { createSession, type DeviceRequest, type VlmSession } from '@vlmkit/runtime';

export interface SessionCacheOptions {
  /**
   * Where built .onnx files go. Default: the checkpoint's directory when it is
   * writable (external data then points straight into the .safetensors files:
   * no weight is copied), else `$TMPDIR/vlmkit-cache` (weights copied once).
   */
  cacheDir?: string | undefined;
  device?: DeviceRequest | undefined;
  threads?: number | undefined;
  logger?: ((msg: string) => void) | undefined;
}

export interface CachedSessionExtras {
  /** Files the graph's lazy tensors read besides the checkpoint (their size and mtime join the key). */
  extraFiles?: readonly string[];
}

export interface BuiltSession {
  session: VlmSession;
  modelPath: string;
  /** True when the .onnx was already in the cache. */
  cached: boolean;
  buildMs: number;
  sessionMs: number;
}

/**
 * A stable key for a graph: its nodes, inputs, outputs and initializer
 * descriptions, plus the size and mtime of every file it references. Built
 * graphs are deterministic, so the same config and weights give the same key.
 */
export async function graphKey(g: Graph, extraFiles: readonly string[] = []): Promise<string> {
  const snap = g.snapshot();
  const h = createHash('sha256');
  h.update(JSON.stringify({ name: snap.name, opset: snap.opset, domains: snap.domains, nodes: snap.nodes }));
  h.update(JSON.stringify([...snap.inputs, ...snap.outputs].map((v) => [v.name, v.dtype, v.shape])));
  const files = new Set<string>();
  for (const { name, ref } of snap.initializers) {
    const where = ref.kind === 'file' ? [ref.path, ref.byteOffset, ref.byteLength] : ref.kind;
    h.update(JSON.stringify([name, ref.dtype, ref.shape, where]));
    if (ref.kind === 'file') files.add(ref.path);
  }
  // Files lazy tensors read besides the checkpoint (e.g. a LoRA adapter merged at load) count too.
  for (const f of extraFiles) files.add(f);
  for (const f of [...files].sort()) {
    const s = await stat(f);
    h.update(`${f}:${s.size}:${s.mtimeMs}`);
  }
  // Lazy tensors are transforms of checkpoint tensors: covered by the files' stamps above.
  return h.digest('hex').slice(0, 16);
}

async function writable(dir: string): Promise<boolean> {
  try {
    await access(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Saves `g` into the cache (unless it is there already) and opens a session
 * on it. The .onnx appears atomically (written under a temporary name, then
 * renamed), so concurrent processes building the same model are safe.
 */
export async function cachedSession(
  g: Graph,
  checkpointDir: string,
  name: string,
  o: SessionCacheOptions,
  extras: CachedSessionExtras = {},
): Promise<BuiltSession> {
  const t0 = performance.now();
  const dir = o.cacheDir ?? ((await writable(checkpointDir)) ? checkpointDir : join(tmpdir(), 'vlmkit-cache'));
  await mkdir(dir, { recursive: true });
  const key = await graphKey(g, extras.extraFiles);
  const base = `vlmkit-${name}-${key}`;
  const modelPath = join(dir, `${base}.onnx`);
  let cached = true;
  try {
    await stat(modelPath);
  } catch {
    cached = false;
    // Both files are written under temporary names and renamed into place, data first: a concurrent
    // process building the same model writes identical bytes, and a reader never sees a partial file.
    const tag = `tmp-${process.pid}-${Date.now()}`;
    const dataFile = `${base}.onnx.data`;
    const tmpModel = join(dir, `${base}.${tag}.onnx`);
    const saved = await saveModel(g, tmpModel, { dataFile, writeDataTo: `${dataFile}.${tag}` });
    if (saved.dataPath !== undefined) await rename(join(dir, `${dataFile}.${tag}`), join(dir, dataFile));
    await rename(tmpModel, modelPath);
  }
  const t1 = performance.now();
  const session = await createSession(modelPath, {
    name,
    ...(o.device !== undefined ? { device: o.device } : {}),
    ...(o.threads !== undefined ? { threads: o.threads } : {}),
    ...(o.logger !== undefined ? { logger: o.logger } : {}),
  });
  return { session, modelPath, cached, buildMs: t1 - t0, sessionMs: performance.now() - t1 };
}
