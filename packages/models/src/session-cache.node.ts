import { readFile, stat } from 'node:fs/promises';
import { emulateInFloat32, type Graph } from '@vlmkit/onnx-graph';
import { createSession, type DeviceRequest, type VlmSession } from '@vlmkit/runtime';
import { ModelError } from './errors.js';
import { type CacheHit, GraphCache } from './graph-cache.node.js';
import { MemoryBudget } from './memory-check.js';

export interface SessionCacheOptions {
  /**
   * Where built graphs are cached. Default: `$XDG_CACHE_HOME/vlmkit`, else `~/.cache/vlmkit`; never the
   * model directory unless it is passed here. Weights are read from the checkpoint's own files in place;
   * the cache holds graphs and what the build produced (quantized weights). See `GraphCache`.
   */
  cacheDir?: string | undefined;
  /** How much of a cached graph's external data is re-hashed on load (see `GraphCacheOptions.verify`). */
  verifyCache?: 'auto' | 'full' | undefined;
  device?: DeviceRequest | undefined;
  threads?: number | undefined;
  logger?: ((msg: string) => void) | undefined;
  /**
   * ORT's prepacking of constant weights at session creation (see `SessionOptions.prepack`). Default false,
   * except for a quantized graph (MatMulNBits nodes): MatMulNBits runs on its packed blocks only (unpacked it
   * dequantizes the weight on every run: an order of magnitude slower, models README and tools/bench/quant-matmul.mjs).
   */
  prepack?: boolean | undefined;
  /**
   * Where a session that prepacks (a quantized one, or any with `prepack`) keeps ORT's packed weights: 'memory'
   * (default): packed at every session creation, in ORT's own memory; 'cache': packed once and written to the
   * graph cache beside the entry (./packed-weights.node.ts), then memory-mapped by later sessions. CPU only.
   */
  packedWeights?: 'memory' | 'cache' | undefined;
  /**
   * Refuse (INSUFFICIENT_MEMORY) a CPU session whose graph and weights are larger than the memory the
   * system says is available (/proc/meminfo MemAvailable) before ORT loads them, instead of being killed
   * part-way. Default true; no check where /proc/meminfo is missing or the device is 'cuda'.
   */
  memoryCheck?: boolean | undefined;
  /**
   * Run graphs built with computeDtype 'bfloat16' on float32 kernels, each bfloat16 result rounded to
   * bfloat16 (onnx-graph's `emulateInFloat32`, on a copy of the cached .onnx): the bfloat16 graph's numbers on
   * an EP without bfloat16 kernels (ORT's CPU EP). For checking numerics (tests, before a GPU run); slower
   * than float32. Default false: a bfloat16 session on CPU fails with NO_KERNEL.
   */
  emulateBfloat16?: boolean | undefined;
}

export interface CachedSessionExtras {
  /** Files the graph's lazy tensors read besides the checkpoint (their content joins the key). */
  extraFiles?: readonly string[];
  /** Called when the graph is in the cache (built, or found and verified) and its session is being created: progress. */
  onSession?: (() => void) | undefined;
  /**
   * The memory check shared by one load's sessions (`MemoryBudget`), so that each is checked beside the ones
   * made before it. Default: a budget of this session alone.
   */
  memory?: MemoryBudget | undefined;
}

export interface BuiltSession {
  session: VlmSession;
  modelPath: string;
  /** True when the .onnx was already in the cache (and verified). */
  cached: boolean;
  buildMs: number;
  sessionMs: number;
  /** Opens another session on the same cached graph with the same options (the vision encoder's 'per-call' mode). */
  reopen: () => Promise<VlmSession>;
}

/**
 * The graph cache's key for a graph built from `checkpointDir` (see `GraphCache.key`: the graph and the stamps
 * of the checkpoint's files; no weight is read), with the cache in `cacheDir` (default: the user cache directory).
 */
export async function graphKey(
  g: Graph,
  checkpointDir: string,
  options: { extraFiles?: readonly string[]; cacheDir?: string | undefined } = {},
): Promise<string> {
  const cache = await GraphCache.open(options.cacheDir);
  return (await cache.key(g, checkpointDir, options.extraFiles)).key;
}

const OPEN_ATTEMPTS = 4;

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
  const checking = o.memoryCheck !== false && o.device !== 'cuda';
  const memory = extras.memory ?? new MemoryBudget(memAvailable);
  const check = (bytes: number, modelPath: string) => memory.check(name, bytes, modelPath);
  // A first load is checked before it quantizes or writes anything; a cached one before ORT loads it.
  const lookUp = () => cache.get(g, name, checkpointDir, extras.extraFiles, checking ? check : undefined);
  let hit = await lookUp();
  const t1 = performance.now();
  if (checking) await check(hit.bytes, hit.modelPath);
  extras.onSession?.();
  const emulate = (from: CacheHit) => o.emulateBfloat16 === true && from.computeDtype === 'bfloat16';
  const open = async (from: CacheHit) => {
    const prepack = o.prepack ?? from.quantized;
    const options = {
      name,
      ...(o.device !== undefined ? { device: o.device } : {}),
      ...(o.threads !== undefined ? { threads: o.threads } : {}),
      ...(o.logger !== undefined ? { logger: o.logger } : {}),
      prepack,
      computeDtype: from.computeDtype,
    };
    if (o.packedWeights === 'cache' && prepack && o.device !== 'cuda' && !emulate(from)) {
      // The packed copy holds every weight itself: no external data folder.
      const packed = await from.packed();
      if (packed === undefined) {
        return from.writePacked((target) => createSession(from.model, { ...options, externalDataFolder: from.folder, savePacked: target }));
      }
      if (packed !== 'refused') return createSession(packed.path, options);
    }
    return createSession(emulate(from) ? emulateInFloat32(from.model, 'bfloat16') : from.model, {
      ...options,
      externalDataFolder: from.folder,
    });
  };
  let session: VlmSession | undefined;
  // Another process may remove the entry (pruned as superseded, or found damaged) between the lookup and the
  // session, and a checkpoint file may change while ORT reads it: look it up (rebuild it) again, a few times
  // (several processes may keep pruning each other's entries of one model when they build more variants than
  // `keep`). Any other failure is the caller's.
  for (let attempt = 1; session === undefined; attempt++) {
    try {
      session = await open(hit);
      if (!(await hit.unchanged())) {
        await session.release();
        session = undefined;
        if (attempt === OPEN_ATTEMPTS) throw changedError(name, checkpointDir);
        hit = await lookUp();
      }
    } catch (e) {
      if (attempt === OPEN_ATTEMPTS || ((await hit.unchanged()) && (await stillThere(hit.modelPath)))) throw e;
      hit = await lookUp();
    }
  }
  const opened = hit;
  if (checking) memory.hold(opened.bytes);
  return {
    session,
    modelPath: opened.modelPath,
    cached: opened.cached,
    buildMs: t1 - t0,
    sessionMs: performance.now() - t1,
    reopen: () => open(opened),
  };
}

function changedError(name: string, checkpointDir: string): ModelError {
  return new ModelError(
    'BAD_INPUT',
    `session '${name}': the checkpoint files in ${checkpointDir} kept changing while they were loaded; load again once they are complete.`,
  );
}

/** MemAvailable of /proc/meminfo in bytes (`text`: its contents); undefined where there is none. */
export async function memAvailable(text?: string): Promise<number | undefined> {
  let t = text;
  if (t === undefined) {
    try {
      t = await readFile('/proc/meminfo', 'utf8');
    } catch {
      return undefined;
    }
  }
  const m = /^MemAvailable:\s+(\d+)\s*kB/m.exec(t);
  return m ? Number(m[1]) * 1024 : undefined;
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
