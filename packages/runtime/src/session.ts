/**
 * A session: one ONNX model on one device. createSession loads the model from bytes, an in-memory model
 * (bytes and external data buffers, as @vlmkit/onnx-graph's `serializeModel` gives it) or a path (a URL in
 * the browser), on the device the platform's rule picks (backend.ts: CUDA or CPU in Node, WebGPU or WASM in
 * the browser), and wraps every ORT failure in a RuntimeError that names the session and, where ORT says,
 * the node.
 */
import { type OrtSession, type OrtSessionOptions, sessionBackend } from '#platform';
import type { RunGuard, SessionBackend } from './backend.js';
import type { Device, DeviceRequest } from './device.js';
import { RuntimeError, wrapOrtError } from './errors.js';
import { type Feed, prepareFeeds, readOutputs, type ValueInfo } from './feeds.js';
import { type Logger, resolveLogger } from './log.js';
import { type HostTensor, toOrt } from './tensor.js';

export interface ExternalDataBuffer {
  /** The `location` the model's initializers name (relative to the model). */
  path: string;
  data: Uint8Array;
}

/** A model in memory: its bytes and the external data its initializers name (onnx-graph's `SerializedModel`). */
export interface InMemoryModel {
  bytes: Uint8Array;
  externalData?: readonly ExternalDataBuffer[];
}

/** A path to an .onnx file (in the browser: a URL), the model's bytes, or a model in memory. */
export type ModelSource = string | Uint8Array | InMemoryModel;

export type GraphOptimizationLevel = 'disabled' | 'basic' | 'extended' | 'layout' | 'all';

export interface SessionOptions {
  /**
   * 'auto' (default): in Node CUDA when its EP binaries are installed and a GPU answers, else CPU; in the
   * browser WebGPU when `navigator.gpu` gives an adapter, else WASM. 'cpu' is WASM in the browser.
   */
  device?: DeviceRequest;
  /**
   * Intra-op threads (ORT's default: one per physical core). In the browser, WASM threads
   * (`ort.env.wasm.numThreads`): fixed by the first session of the page, and more than one only in a
   * cross-origin isolated page (COOP/COEP headers); the device reason says what runs.
   */
  threads?: number;
  /** External data files handed over as buffers (ORT copies them into its own memory at session creation). */
  externalData?: ExternalDataBuffer[];
  /**
   * For a model given as bytes: the folder its external-data locations are relative to (ORT's
   * session.model_external_initializers_file_folder_path). ORT reads those files itself, memory-mapping
   * the tensors it uses as stored, so weights in files elsewhere are used in place, never copied by us.
   * A location must not leave this folder (ORT refuses `..` out of it and absolute paths). Node only.
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
   * Node, CPU, with `prepack`: also write the model as this session runs it to `modelPath`, every weight over
   * 1 MiB in `dataFile` (a file name, beside `modelPath`; smaller ones in the model) together with the packed
   * copies ORT made of them (ORT's optimizedModelFilePath and session.save_external_prepacked_constant_initializers).
   * A session created from that file later memory-maps those packed weights instead of packing them again.
   */
  savePacked?: { modelPath: string; dataFile: string };
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

function valueInfo(m: OrtSession['inputMetadata'][number]): ValueInfo {
  if (!m.isTensor) return { name: m.name, isTensor: false };
  return { name: m.name, isTensor: true, dtype: m.type, dims: [...m.shape] };
}

export class VlmSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly ValueInfo[];
  readonly outputMetadata: readonly ValueInfo[];
  #ort: OrtSession | undefined;
  readonly #Tensor: SessionBackend['Tensor'];
  readonly #guard: RunGuard | undefined;

  /** @internal Use createSession(). */
  constructor(
    session: OrtSession,
    readonly name: string,
    readonly device: Device,
    /** Why `device` was chosen, e.g. "auto: CUDA EP binaries not found in ...". */
    readonly deviceReason: string,
    /** The ORT Tensor class of the onnxruntime that made `session` (default: the platform's), and its run guard. */
    backend: { Tensor: SessionBackend['Tensor']; guard?: RunGuard | undefined } = sessionBackend,
  ) {
    this.#ort = session;
    this.#Tensor = backend.Tensor;
    this.#guard = backend.guard;
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
    const ortFeeds = prepareFeeds(this.name, feeds, this.inputMetadata, (t) => toOrt(t, this.#Tensor));
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
    let result: Awaited<ReturnType<OrtSession['run']>>;
    try {
      const run = () => (opts.outputs === undefined ? session.run(ortFeeds) : session.run(ortFeeds, [...opts.outputs]));
      result = this.#guard === undefined ? await run() : await this.#guard(run);
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

function checkOptions(name: string, opts: SessionOptions, devices: readonly DeviceRequest[]): void {
  const device = opts.device ?? 'auto';
  if (!devices.includes(device)) {
    const list = devices.map((d) => `'${d}'`);
    const where =
      device === 'cuda'
        ? ' (CUDA needs onnxruntime-node, in Node; in the browser use WebGPU)'
        : device === 'wasm' || device === 'webgpu'
          ? ' (a browser device, onnxruntime-web; in Node use cpu or cuda)'
          : '';
    throw new RuntimeError(
      'INVALID_OPTIONS',
      `Session '${name}': device must be ${list.slice(0, -1).join(', ')} or ${list.at(-1)}, got '${String(device)}'${where}.`,
      { session: name },
    );
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
export function ortSessionOptions(opts: SessionOptions, logging: boolean): OrtSessionOptions {
  const base: OrtSessionOptions = {
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
  if (opts.savePacked !== undefined) {
    base.optimizedModelFilePath = opts.savePacked.modelPath;
    session.save_external_prepacked_constant_initializers = '1';
    session.optimized_model_external_initializers_file_name = opts.savePacked.dataFile;
    // ORT 1.29 aligns only tensors over 1 MiB in the data file, and maps the packed copies where they lie: one
    // at an unaligned offset computes garbage (NaN, int4 MatMulNBits at accuracy level 4). Smaller tensors stay
    // in the model, where ORT packs them at load as without a saved copy.
    session.optimized_model_external_initializers_min_size_in_bytes = String(2 ** 20 + 1);
  }
  if (Object.keys(session).length > 0) base.extra = { session };
  if (opts.cpuMemArena === false) base.enableCpuMemArena = false;
  return base;
}

/** The base name of a path or URL (POSIX `basename`), for a session's default name. */
function baseName(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}

/** createSession on a given platform backend (tests run the browser's, onnxruntime-web, in Node). */
export async function createSessionOn(backend: SessionBackend, model: ModelSource, opts: SessionOptions = {}): Promise<VlmSession> {
  let input: string | Uint8Array;
  if (typeof model === 'string' || model instanceof Uint8Array) input = model;
  else {
    input = model.bytes;
    // The model's own external data first; the options' (if any) after it.
    if (model.externalData !== undefined && model.externalData.length > 0) {
      opts = { ...opts, externalData: [...model.externalData, ...(opts.externalData ?? [])] };
    }
  }
  const name = opts.name ?? (typeof input === 'string' ? baseName(input) : 'model');
  checkOptions(name, opts, backend.devices);
  const log = resolveLogger(opts.logger);
  const base = ortSessionOptions(opts, log !== undefined);
  const { session, device, reason, guard } = await backend.open(input, { name, opts, base, log });
  log?.(`session '${name}': device ${device} (${reason})`);
  return new VlmSession(session, name, device, reason, { Tensor: backend.Tensor, guard });
}

/** Load an ONNX model (a path, bytes, or bytes with external data buffers) into a session on the chosen device. */
export async function createSession(model: ModelSource, opts: SessionOptions = {}): Promise<VlmSession> {
  return createSessionOn(sessionBackend, model, opts);
}
