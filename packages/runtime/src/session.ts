/**
 * A session: one ONNX model on one device. createSession picks the device
 * (see device.ts), loads the model from bytes or a path (with external data
 * from buffers or from files next to the model), and wraps every ORT failure
 * in a RuntimeError that names the session and, where ORT says, the node.
 */
import { basename } from 'node:path';
import ort from 'onnxruntime-node';
import {
  chooseDevice,
  cudaInstallHint,
  type Device,
  type DeviceFacts,
  type DeviceRequest,
  findCudaBinaries,
  isCudaProviderFailure,
  probeNvidiaGpu,
} from './device.js';
import { errorMessage, noKernelError, RuntimeError, wrapOrtError } from './errors.js';
import { type Feed, prepareFeeds, readOutputs, type ValueInfo } from './feeds.js';
import { type Logger, resolveLogger } from './log.js';
import type { HostTensor } from './tensor.js';

export interface ExternalDataBuffer {
  /** The `location` the model's initializers name (relative to the model). */
  path: string;
  data: Uint8Array;
}

export type GraphOptimizationLevel = 'disabled' | 'basic' | 'extended' | 'layout' | 'all';

export interface SessionOptions {
  /** 'auto' (default): CUDA when its EP binaries are installed and a GPU answers, else CPU. */
  device?: DeviceRequest;
  /** Intra-op threads (ORT's default: one per physical core). */
  threads?: number;
  /** External data files handed over as buffers (ORT copies them into its own memory at session creation). */
  externalData?: ExternalDataBuffer[];
  /**
   * For a model given as bytes: the folder its external-data locations are relative to (ORT's
   * session.model_external_initializers_file_folder_path). ORT reads those files itself, memory-mapping
   * the tensors it uses as stored, so weights in files elsewhere are used in place, never copied by us.
   * A location must not leave this folder (ORT refuses `..` out of it and absolute paths).
   */
  externalDataFolder?: string;
  /** Receives one line saying which device was chosen and why. Default: VLMKIT_LOG, else silent. */
  logger?: Logger;
  graphOptimizationLevel?: GraphOptimizationLevel;
  /** Used in errors and logs; default: the model file's base name, or 'model'. */
  name?: string;
  /**
   * CUDA only: let cuBLAS/cuDNN run float32 matmuls and convolutions in TF32 (10-bit mantissa). Default false:
   * float32 stays float32, as on CPU and in PyTorch (torch.backends.cuda.matmul.allow_tf32 is False by default).
   * ORT's CUDA EP enables TF32 unless told otherwise and onnxruntime-node cannot pass its `use_tf32` option, so
   * this sets NVIDIA_TF32_OVERRIDE=0 for the process before the first CUDA session (the libraries read it once).
   */
  tf32?: boolean;
  /**
   * ORT's memory pattern (`enableMemPattern`, ORT's default true): a plan of the run's allocations cached
   * per set of input shapes. Default false here: a decoder's shapes change every step, so each step would
   * cache a plan never used again and memory would grow with the steps (figures in the README).
   * Pass true for fixed-shape sessions run many times.
   */
  memoryPattern?: boolean;
  /**
   * Let ORT repack constant MatMul/Gemm weights into its kernels' layout at session creation (ORT's default).
   * Default false here (session.disable_prepacking): the packed copy is anonymous memory made while the
   * original is loaded and dominates a large session's creation, while unpacked weights stay memory-mapped
   * from the model's data file and run about as fast (figures in the README).
   */
  prepack?: boolean;
  /** ORT's CPU memory arena (default true, ORT's default); false returns freed activations to the system. */
  cpuMemArena?: boolean;
  /**
   * The float type the graph computes in ('float32', 'float16', 'bfloat16': onnx-graph's `ComputeDType`), named
   * in the NO_KERNEL error a session with an op the EP has no kernel for fails with. Default: not named.
   */
  computeDtype?: string;
}

export interface RunOptions {
  /** Fetch only these outputs (default: all). */
  outputs?: readonly string[];
}

const BF16_HINT = 'onnxruntime-node cannot take bfloat16 graph inputs or outputs: keep I/O in float32/float16 and Cast inside the graph.';

function valueInfo(m: ort.InferenceSession.ValueMetadata): ValueInfo {
  if (!m.isTensor) return { name: m.name, isTensor: false };
  return { name: m.name, isTensor: true, dtype: m.type, dims: [...m.shape] };
}

export class VlmSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly ValueInfo[];
  readonly outputMetadata: readonly ValueInfo[];
  #ort: ort.InferenceSession | undefined;

  /** @internal Use createSession(). */
  constructor(
    session: ort.InferenceSession,
    readonly name: string,
    readonly device: Device,
    /** Why `device` was chosen, e.g. "auto: CUDA EP binaries not found in ...". */
    readonly deviceReason: string,
  ) {
    this.#ort = session;
    this.inputNames = [...session.inputNames];
    this.outputNames = [...session.outputNames];
    this.inputMetadata = session.inputMetadata.map(valueInfo);
    this.outputMetadata = session.outputMetadata.map(valueInfo);
  }

  /**
   * Run the model. Feeds are checked against the inputs first (names, dtype,
   * rank, fixed and symbolic dims: `prepareFeeds`). Note: ORT-node runs on the
   * main thread and blocks the event loop for the duration of the run.
   */
  async run(feeds: Record<string, Feed>, opts: RunOptions = {}): Promise<Record<string, HostTensor>> {
    const session = this.#ort;
    if (session === undefined) {
      throw new RuntimeError('SESSION_RELEASED', `Session '${this.name}' was released; create a new one.`, {
        session: this.name,
      });
    }
    const ortFeeds = prepareFeeds(this.name, feeds, this.inputMetadata);
    if (opts.outputs !== undefined) {
      const unknown = opts.outputs.filter((o) => !this.outputNames.includes(o));
      if (unknown.length > 0) {
        throw new RuntimeError(
          'INVALID_FEEDS',
          `Session '${this.name}': unknown output(s) ${unknown.map((o) => `'${o}'`).join(', ')}; the model's outputs are: ${this.outputNames.join(', ')}.`,
          { session: this.name },
        );
      }
    }
    let result: ort.InferenceSession.ReturnType;
    try {
      result = opts.outputs === undefined ? await session.run(ortFeeds) : await session.run(ortFeeds, [...opts.outputs]);
    } catch (e) {
      throw wrapOrtError('ORT_RUN_FAILED', this.name, e);
    }
    return readOutputs(result);
  }

  get released(): boolean {
    return this.#ort === undefined;
  }

  /** Free the native session. Idempotent; outputs already returned stay valid. */
  async release(): Promise<void> {
    const session = this.#ort;
    this.#ort = undefined;
    if (session !== undefined) await session.release();
  }
}

function defaultFacts(): DeviceFacts {
  return { binaries: findCudaBinaries(), gpu: probeNvidiaGpu };
}

async function ortCreate(model: Uint8Array | string, options: ort.InferenceSession.SessionOptions): Promise<ort.InferenceSession> {
  return typeof model === 'string' ? ort.InferenceSession.create(model, options) : ort.InferenceSession.create(model, options);
}

function checkOptions(name: string, opts: SessionOptions): void {
  const device = opts.device ?? 'auto';
  if (!['auto', 'cpu', 'cuda'].includes(device)) {
    throw new RuntimeError('INVALID_OPTIONS', `Session '${name}': device must be 'auto', 'cpu' or 'cuda', got '${String(device)}'.`, {
      session: name,
    });
  }
  if (opts.threads !== undefined && !(Number.isInteger(opts.threads) && opts.threads > 0)) {
    throw new RuntimeError('INVALID_OPTIONS', `Session '${name}': threads must be a positive integer, got ${opts.threads}.`, {
      session: name,
    });
  }
}

/**
 * The ORT session options (all but the execution providers) for `opts`; `logging`: let ORT's own lines through.
 * Exported for tests.
 */
export function ortSessionOptions(opts: SessionOptions, logging: boolean): ort.InferenceSession.SessionOptions {
  const base: ort.InferenceSession.SessionOptions = {
    // ORT's own error lines would repeat what we throw; let them through only when logging is on.
    logSeverityLevel: logging ? 2 : 4,
  };
  if (opts.threads !== undefined) base.intraOpNumThreads = opts.threads;
  if (opts.graphOptimizationLevel !== undefined) base.graphOptimizationLevel = opts.graphOptimizationLevel;
  base.enableMemPattern = opts.memoryPattern ?? false;
  if (opts.externalData !== undefined) base.externalData = opts.externalData.map(({ path, data }) => ({ path, data }));
  const session: Record<string, string> = {};
  if (opts.prepack !== true) session.disable_prepacking = '1';
  if (opts.externalDataFolder !== undefined) session.model_external_initializers_file_folder_path = opts.externalDataFolder;
  if (Object.keys(session).length > 0) base.extra = { session };
  if (opts.cpuMemArena === false) base.enableCpuMemArena = false;
  return base;
}

/**
 * createSession with the device facts injectable (tests use it to play a
 * machine with CUDA binaries and a GPU). Not exported from the package.
 */
export async function openSession(model: Uint8Array | string, opts: SessionOptions, facts: DeviceFacts): Promise<VlmSession> {
  const name = opts.name ?? (typeof model === 'string' ? basename(model) : 'model');
  checkOptions(name, opts);
  const log = resolveLogger(opts.logger);
  const request = opts.device ?? 'auto';

  const base = ortSessionOptions(opts, log !== undefined);

  const choice = chooseDevice(request, facts);
  if (choice.unavailable !== undefined) {
    throw new RuntimeError(
      'CUDA_UNAVAILABLE',
      `Session '${name}': device 'cuda' was requested but ${choice.unavailable}. ${cudaInstallHint(facts.binaries.dir)}`,
      { session: name },
    );
  }

  const loadError = (e: unknown): RuntimeError =>
    noKernelError(name, e, opts.computeDtype) ??
    wrapOrtError('ORT_LOAD_FAILED', name, e, /Unsupported data type: 16\b/.test(errorMessage(e)) ? BF16_HINT : undefined);

  let device: Device = choice.device;
  let reason = choice.reason;
  let session: ort.InferenceSession | undefined;
  if (device === 'cuda') {
    const tf32 = cudaTf32(name, opts.tf32 ?? false, process.env);
    reason += tf32 ? '; TF32 allowed' : '; TF32 off (NVIDIA_TF32_OVERRIDE=0)';
    try {
      session = await ortCreate(model, { ...base, executionProviders: ['cuda', 'cpu'] });
    } catch (e) {
      const msg = errorMessage(e);
      if (!isCudaProviderFailure(msg)) throw loadError(e);
      if (request === 'cuda') {
        throw new RuntimeError(
          'CUDA_UNAVAILABLE',
          `Session '${name}': the CUDA EP failed to start: ${msg}. ${cudaInstallHint(facts.binaries.dir)}`,
          { session: name, cause: e },
        );
      }
      device = 'cpu';
      reason = `auto: the CUDA EP failed to start (${msg.split('\n')[0]}); using CPU`;
    }
  }
  if (session === undefined) {
    try {
      session = await ortCreate(model, { ...base, executionProviders: ['cpu'] });
    } catch (e) {
      throw loadError(e);
    }
  }
  log?.(`session '${name}': device ${device} (${reason})`);
  return new VlmSession(session, name, device, reason);
}

/** Load an ONNX model (bytes or a .onnx path) into a session on the chosen device. */
export async function createSession(model: Uint8Array | string, opts: SessionOptions = {}): Promise<VlmSession> {
  return openSession(model, opts, defaultFacts());
}

/** TF32 as fixed by the first CUDA session of this process (cuBLAS and cuDNN read NVIDIA_TF32_OVERRIDE once). */
let processTf32: boolean | undefined;

/**
 * Applies the `tf32` choice through NVIDIA_TF32_OVERRIDE before the CUDA libraries load, and refuses a later
 * session that asks for the other setting (it could not take effect). Returns whether TF32 is allowed.
 * Exported for tests only; `state` lets them start from a fresh process.
 */
export function cudaTf32(
  name: string,
  wanted: boolean,
  env: NodeJS.ProcessEnv,
  state: { tf32?: boolean } | undefined = undefined,
): boolean {
  const current = state ? state.tf32 : processTf32;
  const fix = (v: boolean) => {
    if (state) state.tf32 = v;
    else processTf32 = v;
  };
  const override = env.NVIDIA_TF32_OVERRIDE;
  if (current === undefined) {
    if (override === undefined) {
      if (!wanted) env.NVIDIA_TF32_OVERRIDE = '0';
      fix(wanted);
      return wanted;
    }
    if (wanted && override === '0') {
      throw new RuntimeError(
        'INVALID_OPTIONS',
        `Session '${name}': tf32: true was asked for but NVIDIA_TF32_OVERRIDE=0 is set in the environment, which turns TF32 off for the whole process; unset it.`,
        { session: name },
      );
    }
    fix(override !== '0');
    return override !== '0';
  }
  if (current !== wanted) {
    throw new RuntimeError(
      'INVALID_OPTIONS',
      `Session '${name}': tf32: ${wanted} differs from this process's first CUDA session (tf32: ${current}); cuBLAS and cuDNN fix TF32 for the process when they load, so run sessions that need the other setting in another process.`,
      { session: name },
    );
  }
  return current;
}
