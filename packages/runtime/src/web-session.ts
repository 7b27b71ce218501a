// The browser's sessions on onnxruntime-web: WebGPU when asked for (or for 'auto') and `navigator.gpu` gives an
// adapter, WASM otherwise. The ORT namespace is a parameter so that Node tests run this very code on
// onnxruntime-web's WASM backend (platform.browser.ts passes the real one).
import type { OrtSession, OrtSessionOptions, Tensor } from '#platform';
import type { OpenContext, OpenedSession, RunGuard, SessionBackend } from './backend.js';
import { WEB_DEVICE_REQUESTS } from './device.js';
import { errorMessage, noKernelError, RuntimeError, wrapOrtError } from './errors.js';

/** The part of onnxruntime-web's namespace a session needs. */
export interface WebOrt {
  InferenceSession: { create(model: Uint8Array | string, options: OrtSessionOptions): Promise<OrtSession> };
  Tensor: typeof Tensor;
  /** `webgpu.device`: the GPUDevice ORT runs on, once a WebGPU session exists (a Promise or the device). */
  env: { wasm: { numThreads?: number }; webgpu?: { readonly device?: unknown } };
}

/** The part of WebGPU's `navigator.gpu` the device rule asks (no DOM types in this package). */
export interface GpuLike {
  requestAdapter(): Promise<{
    info?: { vendor?: string; architecture?: string; description?: string };
    features?: Iterable<string>;
  } | null>;
}

/** Whether the page has a WebGPU adapter, what it is, and its features (e.g. 'shader-f16' for float16 kernels). */
export interface WebGpuProbe {
  found: boolean;
  /** The adapter (vendor, architecture), or why there is none: for the device reason. */
  evidence: string;
  features: readonly string[];
}

/** Asks `navigator.gpu` (default: the page's) for an adapter. In Node (no WebGPU) it finds none and says so. */
export async function probeWebGpu(gpu: GpuLike | undefined = pageFacts().gpu): Promise<WebGpuProbe> {
  if (gpu === undefined)
    return { found: false, evidence: 'navigator.gpu is undefined (no WebGPU in this browser, or not enabled)', features: [] };
  let adapter: Awaited<ReturnType<GpuLike['requestAdapter']>>;
  try {
    adapter = await gpu.requestAdapter();
  } catch (e) {
    return { found: false, evidence: `navigator.gpu.requestAdapter() failed: ${errorMessage(e)}`, features: [] };
  }
  if (adapter === null) return { found: false, evidence: 'navigator.gpu.requestAdapter() gave no adapter', features: [] };
  const which = [adapter.info?.vendor, adapter.info?.architecture, adapter.info?.description].filter((s) => s).join(' ');
  return { found: true, evidence: `WebGPU adapter${which ? ` (${which})` : ''}`, features: [...(adapter.features ?? [])].sort() };
}

/** What the page offers: WebGPU and cross-origin isolation (WASM threads need SharedArrayBuffer). */
export interface WebFacts {
  gpu: GpuLike | undefined;
  crossOriginIsolated: boolean;
}

export function pageFacts(): WebFacts {
  const g = globalThis as { navigator?: { gpu?: GpuLike }; crossOriginIsolated?: boolean };
  return { gpu: g.navigator?.gpu, crossOriginIsolated: g.crossOriginIsolated === true };
}

/** The ORT envs whose WASM module has started (once per page: its thread count is fixed then). */
const started = new WeakSet<object>();

const ISOLATION = 'the page is not cross-origin isolated: serve it with COOP same-origin and COEP require-corp for WASM threads';

/** Before the first session: `threads` into `ort.env.wasm.numThreads` (1 where threads cannot run). */
function setThreads(ort: WebOrt, asked: number | undefined, isolated: boolean): void {
  if (started.has(ort.env)) return;
  started.add(ort.env);
  if (asked !== undefined) ort.env.wasm.numThreads = isolated ? asked : 1;
}

/** What runs, once ORT has started (it writes its choice back to `env.wasm.numThreads`). */
function threadsNote(ort: WebOrt, asked: number | undefined, isolated: boolean): string {
  const running = ort.env.wasm.numThreads;
  const head = running === undefined ? "ORT's default WASM threads" : `${running} WASM thread${running === 1 ? '' : 's'}`;
  if (asked !== undefined && running !== undefined && asked !== running) {
    return `${head}, not the ${asked} asked for (${isolated ? 'fixed by the first session of the page' : ISOLATION})`;
  }
  return running === 1 && !isolated ? `${head} (${ISOLATION})` : head;
}

/** The part of a GPUDevice the run guard uses. */
interface ErrorScopes {
  pushErrorScope(filter: 'validation'): void;
  popErrorScope(): Promise<{ message: string } | null>;
}

/**
 * A WebGPU session's runs inside a validation error scope. ORT-web's WebGPU kernels do not check what the device
 * refuses (it only logs it): a float16 shader on an adapter without 'shader-f16' fails to compile, the queue
 * drops the work and every output of the run reads zeros (seen in headless Chromium, SwiftShader). A run during
 * which the device reported a validation error fails instead. Runs of several sessions at once share the
 * device's scope stack, so an error may be reported by another of those runs, never lost.
 */
function validationGuard(ort: WebOrt): RunGuard {
  return async (run) => {
    const device = (await ort.env.webgpu?.device) as Partial<ErrorScopes> | undefined;
    if (typeof device?.pushErrorScope !== 'function' || typeof device.popErrorScope !== 'function') return run();
    device.pushErrorScope('validation');
    let result: Awaited<ReturnType<typeof run>>;
    try {
      result = await run();
    } catch (e) {
      await device.popErrorScope();
      throw e;
    }
    const error = await device.popErrorScope();
    if (error !== null) {
      throw new Error(`the WebGPU device refused the run's work (its outputs would be wrong): ${error.message.split('\n')[0]}`);
    }
    return result;
  };
}

/** Float16 inputs or outputs: a WebGPU adapter without 'shader-f16' cannot run the kernels that read them. */
function float16Io(session: OrtSession): boolean {
  return [...session.inputMetadata, ...session.outputMetadata].some((m) => m.isTensor && m.type === 'float16');
}

/** onnxruntime-web's backend: `ort` is `import * as ort from 'onnxruntime-web'`. */
export function webBackend(ort: WebOrt, facts: () => WebFacts = pageFacts): SessionBackend {
  return { devices: WEB_DEVICE_REQUESTS, Tensor: ort.Tensor, open: (model, ctx) => openWeb(ort, model, ctx, facts()) };
}

async function openWeb(
  ort: WebOrt,
  model: Uint8Array | string,
  { name, opts, base }: OpenContext,
  facts: WebFacts,
): Promise<OpenedSession> {
  if (opts.externalDataFolder !== undefined) {
    throw new RuntimeError(
      'INVALID_OPTIONS',
      `Session '${name}': externalDataFolder names a folder for ORT to read files from, which a page cannot; pass the external data as buffers (externalData).`,
      { session: name },
    );
  }
  const request = opts.device ?? 'auto';
  // ORT-web takes enableCpuMemArena as false when unset; Node's default (on) is kept.
  const options: OrtSessionOptions = { ...base, enableCpuMemArena: opts.cpuMemArena ?? true };
  const loadError = (e: unknown): RuntimeError => noKernelError(name, e, opts.computeDtype) ?? wrapOrtError('ORT_LOAD_FAILED', name, e);
  const create = (ep: 'webgpu' | 'wasm') => ort.InferenceSession.create(model, { ...options, executionProviders: [ep] });
  setThreads(ort, opts.threads, facts.crossOriginIsolated);
  const threads = () => threadsNote(ort, opts.threads, facts.crossOriginIsolated);

  let noGpu: string | undefined;
  if (request === 'auto' || request === 'webgpu') {
    const probe = await probeWebGpu(facts.gpu);
    const f16 = probe.features.includes('shader-f16');
    const noF16 = `${probe.evidence} has no 'shader-f16' feature`;
    if (!probe.found) noGpu = probe.evidence;
    else if (!f16 && opts.computeDtype === 'float16') noGpu = `${noF16}, which a float16 graph needs`;
    else {
      try {
        const session = await create('webgpu');
        if (!f16 && float16Io(session)) {
          await session.release();
          noGpu = `${noF16}, and the model's inputs or outputs are float16`;
        } else {
          // Nodes WebGPU has no kernel for run on WASM, with its threads.
          const reason = `${request === 'auto' ? 'auto' : 'webgpu requested'}: ${probe.evidence}; ${threads()}`;
          return { session, device: 'webgpu', reason, guard: validationGuard(ort) };
        }
      } catch (e) {
        if (request === 'webgpu') throw loadError(e);
        noGpu = `the WebGPU backend failed (${errorMessage(e).split('\n')[0]})`;
      }
    }
    if (request === 'webgpu') {
      throw new RuntimeError(
        'WEBGPU_UNAVAILABLE',
        `Session '${name}': device 'webgpu' was requested but ${noGpu}; use device 'wasm' (or 'auto').`,
        {
          session: name,
        },
      );
    }
  }
  let session: OrtSession;
  try {
    session = await create('wasm');
  } catch (e) {
    throw loadError(e);
  }
  const why = request === 'auto' ? `auto: ${noGpu}; WASM` : `${request} requested: WASM (onnxruntime-web's CPU backend)`;
  return { session, device: 'wasm', reason: `${why}, ${threads()}` };
}
