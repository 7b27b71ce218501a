// A session on a graph built in memory: a load from `ModelFiles` (a page, a URL, a picked folder) has no disk
// graph cache yet, so its graphs are rewritten as on a cache miss (the deferred passes), serialized into one
// buffer (onnx-graph's `serializeModel`: the weights read through their sources once, bf16 casts folded as the
// cache folds them) and handed to the runtime as bytes (onnxruntime-node in Node, onnxruntime-web in a page).
// The seam for a browser cache (OPFS / Cache Storage, keyed as Node's: the graph's description and the files'
// stamps) is here: look the bytes up before serializing, store them after.

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
import { ensureMemory, heldBytes } from './memory-check.js';
import type { BuiltSession, CachedSessionExtras, SessionCacheOptions } from './session-cache.node.js';

export interface MemorySessionExtras extends Pick<CachedSessionExtras, 'onSession'> {
  /**
   * Keep the model's bytes for `reopen` (the vision encoder's 'per-call' mode opens a session per run). Default
   * false: the runtime has copied them, so they are dropped and `reopen` refuses.
   */
  reopenable?: boolean | undefined;
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
  const where = `${name} (built in memory from ${from})`;
  runDeferredPasses(g);
  if (o.memoryCheck !== false && o.device !== 'cuda') {
    const available = await memAvailable();
    if (available !== undefined) ensureMemory(name, heldBytes(g), available, where);
  }
  const quantized = [...everyNode(g.snapshot().nodes)].some((n) => n.opType === 'MatMulNBits');
  const computeDtype = g.computeDtype;
  const { bytes, externalData } = await serializeModel(g, { fold: true });
  const model = o.emulateBfloat16 === true && computeDtype === 'bfloat16' ? emulateInFloat32(bytes, 'bfloat16') : bytes;
  const t1 = performance.now();
  extras.onSession?.();
  const open = opener(name, o, { externalData, quantized, computeDtype });
  const session = await open(model);
  return {
    session,
    modelPath: where,
    cached: false,
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
