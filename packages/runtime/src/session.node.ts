// Node's sessions: onnxruntime-node on CUDA when device.ts's rule plans it (falling back to CPU for 'auto'
// when ORT refuses the EP), on CPU otherwise.
import ort from 'onnxruntime-node';
import type { OpenContext, OpenedSession, SessionBackend } from './backend.js';
import { cudaInstallHint, findCudaBinaries, probeNvidiaGpu } from './cuda.node.js';
import { chooseDevice, type Device, type DeviceFacts, isCudaProviderFailure, NODE_DEVICE_REQUESTS } from './device.js';
import { errorMessage, noKernelError, RuntimeError, wrapOrtError } from './errors.js';

const BF16_HINT = 'onnxruntime-node cannot take bfloat16 graph inputs or outputs: keep I/O in float32/float16 and Cast inside the graph.';

function defaultFacts(): DeviceFacts {
  return { binaries: findCudaBinaries(), gpu: probeNvidiaGpu };
}

async function ortCreate(model: Uint8Array | string, options: ort.InferenceSession.SessionOptions): Promise<ort.InferenceSession> {
  return typeof model === 'string' ? ort.InferenceSession.create(model, options) : ort.InferenceSession.create(model, options);
}

/** Node's backend; `facts` (what is installed, what answers) injectable so tests can play a CUDA machine. */
export function nodeBackend(facts: () => DeviceFacts = defaultFacts): SessionBackend {
  return { devices: NODE_DEVICE_REQUESTS, Tensor: ort.Tensor, open: (model, ctx) => openNode(model, ctx, facts()) };
}

async function openNode(model: Uint8Array | string, { name, opts, base }: OpenContext, facts: DeviceFacts): Promise<OpenedSession> {
  const request = opts.device ?? 'auto';
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
  return { session, device, reason };
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
