import * as ort from 'onnxruntime-web';

/**
 * onnxruntime-web's WASM settings for this page: threads when the page is cross-origin isolated (the server
 * sends COOP/COEP; without SharedArrayBuffer ORT falls back to one thread), at most `max`.
 */
export function configureWasm(max = 4): number {
  // ORT's warnings (nodes placed on the CPU beside WebGPU, ...) would read as errors in the console.
  ort.env.logLevel = 'error';
  const threads = globalThis.crossOriginIsolated ? Math.max(1, Math.min(max, navigator.hardwareConcurrency || 1)) : 1;
  ort.env.wasm.numThreads = threads;
  return threads;
}

/** What `navigator.gpu` says in this browser: an adapter's description, or the reason there is none. */
export async function probeWebGpu(): Promise<{ adapter: boolean; message: string }> {
  const gpu = (navigator as Navigator & { gpu?: { requestAdapter(): Promise<unknown> } }).gpu;
  if (!gpu) {
    return { adapter: false, message: `navigator.gpu is undefined (secure context: ${globalThis.isSecureContext})` };
  }
  try {
    const adapter = (await gpu.requestAdapter()) as {
      info?: { vendor?: string; architecture?: string; description?: string };
      features?: Set<string>;
    } | null;
    if (!adapter) return { adapter: false, message: 'navigator.gpu.requestAdapter() returned null' };
    const info = adapter.info ?? {};
    const f16 = adapter.features?.has('shader-f16') ? ', shader-f16' : '';
    return {
      adapter: true,
      message: `adapter: ${[info.vendor, info.architecture, info.description].filter(Boolean).join(' / ') || 'unnamed'}${f16}`,
    };
  } catch (err) {
    return { adapter: false, message: `navigator.gpu.requestAdapter() threw: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/**
 * Runs `fn` with every session it creates logging at ORT's verbose level: ORT then lists each node with the
 * execution provider it was placed on (session_state.cc, "Node(s) placed on [...]"), in the console.
 */
export async function withPlacementLog<T>(fn: () => Promise<T>): Promise<T> {
  const sessions = ort.InferenceSession as unknown as { create: (...args: unknown[]) => Promise<unknown> };
  const create = sessions.create;
  sessions.create = (model: unknown, options?: unknown, ...rest: unknown[]) =>
    create.call(sessions, model, { ...(options as object), logSeverityLevel: 0, logVerbosityLevel: 0 }, ...rest);
  try {
    return await fn();
  } finally {
    sessions.create = create;
  }
}

export { ort };
