// A session on a graph built in memory: a load from `ModelFiles` (a page, a URL, a picked folder) has no disk
// graph cache, so its graphs are rewritten as on a cache miss (the deferred passes), serialized into one
// buffer (onnx-graph's `serializeModel`: the weights read through their sources once, bf16 casts folded as the
// cache folds them) and handed to the runtime as bytes (onnxruntime-node in Node, onnxruntime-web in a page).
// In a page the bytes go through the page's graph cache (./graph-store.ts, OPFS: ./graph-cache.browser.ts):
// looked up before the passes run (a hit skips them and reads no weight), stored after a build.

import {
  type ComputeDType,
  type ExternalBuffer,
  emulateInFloat32,
  everyNode,
  type Graph,
  runDeferredPasses,
  serializeModel,
} from '@vlmkit/onnx-graph';
import { createSession, type VlmSession } from '@vlmkit/runtime';
import { memAvailable } from '#platform';
import { ModelError } from './errors.js';
import { openPageCache } from './graph-cache.browser.js';
import { type CheckpointVersion, cachedBuild } from './graph-store.js';
import { heldBytes, MemoryBudget } from './memory-check.js';
import type { BuiltSession, CachedSessionExtras, SessionCacheOptions } from './session-cache.node.js';

export interface MemorySessionExtras extends Pick<CachedSessionExtras, 'onSession' | 'memory'> {
  /**
   * Keep the model's bytes for `reopen` (the vision encoder's 'per-call' mode opens a session per run). Default
   * false: the runtime has copied them, so they are dropped and `reopen` refuses.
   */
  reopenable?: boolean | undefined;
  /** The checkpoint's files and versions: the page graph cache keys the graph with them (none without). */
  checkpoint?: CheckpointVersion | undefined;
}

/** Builds `g` in memory (its deferred passes, then its bytes) and opens a session on it; `from`: the checkpoint, for messages. */
export async function memorySession(
  g: Graph,
  from: string,
  name: string,
  o: SessionCacheOptions,
  extras: MemorySessionExtras = {},
): Promise<BuiltSession> {
  const t0 = performance.now();
  const checking = o.memoryCheck !== false && o.device !== 'cuda';
  const memory = extras.memory ?? new MemoryBudget(memAvailable);
  const built = await cachedBuild(
    await openPageCache(o.cacheDir, { logger: o.logger }),
    g,
    name,
    { root: from, version: extras.checkpoint },
    async () => {
      runDeferredPasses(g);
      if (checking) await memory.check(name, heldBytes(g), `${name} (built in memory from ${from})`);
      const quantized = [...everyNode(g.snapshot().nodes)].some((n) => n.opType === 'MatMulNBits');
      return { ...(await serializeModel(g, { fold: true })), quantized, computeDtype: g.computeDtype };
    },
  );
  const { bytes, externalData, quantized, computeDtype } = built;
  const where =
    built.key === undefined ? `${name} (built in memory from ${from})` : `${name} (page graph cache ${built.key}, from ${from})`;
  const model = o.emulateBfloat16 === true && computeDtype === 'bfloat16' ? emulateInFloat32(bytes, 'bfloat16') : bytes;
  const t1 = performance.now();
  extras.onSession?.();
  const open = opener(name, o, { externalData, quantized, computeDtype });
  const session = await open(model);
  // The runtime holds what it was handed (the fold has cast 16-bit weights already).
  if (checking) memory.hold(model.byteLength + externalData.reduce((n, e) => n + e.data.byteLength, 0));
  return {
    session,
    modelPath: where,
    cached: built.cached,
    buildMs: t1 - t0,
    sessionMs: performance.now() - t1,
    // Only a reopenable session's closure holds the bytes (the runtime has its own copy of them); made apart from
    // this scope, so that no other closure keeps them.
    reopen: extras.reopenable === true ? again(open, model) : refuse(name),
  };
}

function opener(
  name: string,
  o: SessionCacheOptions,
  m: { externalData: ExternalBuffer[]; quantized: boolean; computeDtype: ComputeDType },
): (model: Uint8Array) => Promise<VlmSession> {
  return (model) =>
    createSession(model, {
      name,
      ...(m.externalData.length > 0 ? { externalData: m.externalData } : {}),
      ...(o.device !== undefined ? { device: o.device } : {}),
      ...(o.threads !== undefined ? { threads: o.threads } : {}),
      ...(o.logger !== undefined ? { logger: o.logger } : {}),
      ...(o.prepack !== undefined ? { prepack: o.prepack } : m.quantized ? { prepack: true } : {}),
      computeDtype: m.computeDtype,
    });
}

function again(open: (model: Uint8Array) => Promise<VlmSession>, model: Uint8Array): () => Promise<VlmSession> {
  return () => open(model);
}

function refuse(name: string): () => Promise<VlmSession> {
  return async () => {
    throw new ModelError('BAD_LOAD_OPTIONS', `session '${name}' was built in memory without keeping its bytes; it cannot be opened again.`);
  };
}
