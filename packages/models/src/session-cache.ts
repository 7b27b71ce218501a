import { stat } from 'node:fs/promises';
import type { Graph } from '@vlmkit/onnx-graph';
import { createSession, type DeviceRequest, type VlmSession } from '@vlmkit/runtime';
import { GraphCache } from './graph-cache.js';

export interface SessionCacheOptions {
  /**
   * Where built graphs are cached. Default: `$XDG_CACHE_HOME/vlmkit`, else `~/.cache/vlmkit`; never the
   * model directory unless it is passed here (external data then points straight into its .safetensors
   * files: no weight is copied). Entries are keyed by the checkpoint's content and verified when loaded.
   */
  cacheDir?: string | undefined;
  /** How much of a cached graph's external data is re-hashed on load (see `GraphCacheOptions.verify`). */
  verifyCache?: 'auto' | 'full' | undefined;
  device?: DeviceRequest | undefined;
  threads?: number | undefined;
  logger?: ((msg: string) => void) | undefined;
}

export interface CachedSessionExtras {
  /** Files the graph's lazy tensors read besides the checkpoint (their content joins the key). */
  extraFiles?: readonly string[];
  /** Called when the graph is in the cache (built, or found and verified) and its session is being created: progress. */
  onSession?: (() => void) | undefined;
}

export interface BuiltSession {
  session: VlmSession;
  modelPath: string;
  /** True when the .onnx was already in the cache (and verified). */
  cached: boolean;
  buildMs: number;
  sessionMs: number;
}

/**
 * A content key for a graph built from `checkpointDir` (see `GraphCache.key`); digests of the checkpoint
 * files are remembered in `cacheDir` (default: the user cache directory).
 */
export async function graphKey(
  g: Graph,
  checkpointDir: string,
  options: { extraFiles?: readonly string[]; cacheDir?: string | undefined } = {},
): Promise<string> {
  const cache = await GraphCache.open(options.cacheDir);
  return (await cache.key(g, checkpointDir, options.extraFiles)).key;
}

/** Finds `g` in the graph cache (verified) or builds it there, and opens a session on it. */
export async function cachedSession(
  g: Graph,
  checkpointDir: string,
  name: string,
  o: SessionCacheOptions,
  extras: CachedSessionExtras = {},
): Promise<BuiltSession> {
  const t0 = performance.now();
  const cache = await GraphCache.open(o.cacheDir, { logger: o.logger, verify: o.verifyCache });
  let { modelPath, cached } = await cache.get(g, name, checkpointDir, extras.extraFiles);
  const t1 = performance.now();
  extras.onSession?.();
  const open = () =>
    createSession(modelPath, {
      name,
      ...(o.device !== undefined ? { device: o.device } : {}),
      ...(o.threads !== undefined ? { threads: o.threads } : {}),
      ...(o.logger !== undefined ? { logger: o.logger } : {}),
    });
  let session: VlmSession;
  try {
    session = await open();
  } catch (e) {
    // Another process may have removed the entry (pruned as superseded, or found damaged) between the
    // lookup and the session: look it up (rebuild it) once more. Any other failure is the caller's.
    if (await stillThere(modelPath)) throw e;
    ({ modelPath, cached } = await cache.get(g, name, checkpointDir, extras.extraFiles));
    session = await open();
  }
  return { session, modelPath, cached, buildMs: t1 - t0, sessionMs: performance.now() - t1 };
}

async function stillThere(modelPath: string): Promise<boolean> {
  try {
    await stat(modelPath);
    await stat(modelPath.replace(/\.onnx$/, '.json'));
    return true;
  } catch {
    return false;
  }
}
