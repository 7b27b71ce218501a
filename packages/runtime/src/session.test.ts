import ort from 'onnxruntime-node';
import { describe, expect, it, vi } from 'vitest';
import { findCudaBinaries, ortBindingDir } from './cuda.node.js';
import { CUDA_PROVIDER_FILES, type DeviceFacts } from './device.js';
import { RuntimeError } from './errors.js';
import { createSession, createSessionOn, ortSessionOptions, type SessionOptions } from './session.js';
import { cudaTf32, nodeBackend } from './session.node.js';
import { float32, toOrt } from './tensor.js';
import { affineModel, identityModel, impossibleReshapeModel, modelBytes, node, valueInfo } from './test-utils/onnx-models.js';

// The CUDA fallback tests make ORT's process-wide logger print the failed dlopen; we assert on it instead.
ort.env.logLevel = 'fatal';

const cudaInstalled = findCudaBinaries().present;

/** createSession on Node's backend with the device facts played. */
const openSession = (model: Uint8Array, opts: SessionOptions, facts: DeviceFacts) =>
  createSessionOn(
    nodeBackend(() => facts),
    model,
    opts,
  );

async function rejection(p: Promise<unknown>): Promise<RuntimeError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(RuntimeError);
    return e as RuntimeError;
  }
  throw new Error('expected a rejection');
}

describe('createSession on cpu', () => {
  it('runs and gives the right numbers', async () => {
    const s = await createSession(affineModel(), { device: 'cpu', name: 'affine' });
    expect(s.device).toBe('cpu');
    expect(s.deviceReason).toBe('cpu requested');
    expect(s.name).toBe('affine');
    expect(s.inputNames).toEqual(['x']);
    expect(s.outputNames).toEqual(['y']);
    expect(s.inputMetadata).toEqual([{ name: 'x', isTensor: true, dtype: 'float32', dims: ['batch', 4] }]);
    expect(s.outputMetadata).toEqual([{ name: 'y', isTensor: true, dtype: 'float32', dims: ['batch', 4] }]);
    const out = await s.run({ x: float32([0, 1, 2, 3, -1, -0.5, 10, 0.25], [2, 4]) });
    expect(Object.keys(out)).toEqual(['y']);
    expect(out.y?.dims).toEqual([2, 4]);
    expect(Array.from(out.y!.data as Float32Array)).toEqual([1, 3, 5, 7, -1, 0, 21, 1.5]);
    // ORT tensors are accepted as feeds too
    const out2 = await s.run({ x: toOrt(float32([1, 1, 1, 1], [1, 4])) });
    expect(Array.from(out2.y!.data as Float32Array)).toEqual([3, 3, 3, 3]);
    await s.release();
    // outputs stay valid after release
    expect(out.y!.data[6]).toBe(21);
  });

  it('accepts threads and graphOptimizationLevel', async () => {
    const s = await createSession(affineModel(), { device: 'cpu', threads: 1, graphOptimizationLevel: 'disabled' });
    const out = await s.run({ x: float32([1, 2, 3, 4], [1, 4]) });
    expect(Array.from(out.y!.data as Float32Array)).toEqual([3, 5, 7, 9]);
    await s.release();
  });

  it('refuses bad options', async () => {
    expect((await rejection(createSession(affineModel(), { threads: 0 }))).code).toBe('INVALID_OPTIONS');
    expect((await rejection(createSession(affineModel(), { device: 'gpu' as 'cuda' }))).message).toMatch(
      /device must be 'auto', 'cpu' or 'cuda', got 'gpu'/,
    );
  });

  it('refuses runs after release, and release is idempotent', async () => {
    const s = await createSession(affineModel(), { device: 'cpu', name: 'gone' });
    await s.release();
    await s.release();
    expect(s.released).toBe(true);
    const e = await rejection(s.run({ x: float32([1, 2, 3, 4], [1, 4]) }));
    expect(e.code).toBe('SESSION_RELEASED');
    expect(e.message).toBe("Session 'gone' was released; create a new one.");
  });
});

describe('device choice', () => {
  it.skipIf(cudaInstalled)('auto picks cpu on this machine and says why, through the logger', async () => {
    const lines: string[] = [];
    const s = await createSession(affineModel(), { name: 'auto', logger: (m) => lines.push(m) });
    expect(s.device).toBe('cpu');
    expect(s.deviceReason).toBe(`auto: CUDA EP binaries not found in ${ortBindingDir()} (missing ${CUDA_PROVIDER_FILES.join(', ')})`);
    expect(lines).toEqual([`session 'auto': device cpu (${s.deviceReason})`]);
    await s.release();
  });

  it('is silent without a logger unless VLMKIT_LOG names the package', async () => {
    const spy = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      vi.stubEnv('VLMKIT_LOG', '');
      await (await createSession(affineModel(), { name: 'quiet' })).release();
      expect(spy).not.toHaveBeenCalled();
      vi.stubEnv('VLMKIT_LOG', 'vlmkit:*');
      await (await createSession(affineModel(), { name: 'loud' })).release();
      expect(spy).toHaveBeenCalledTimes(1);
      expect(spy.mock.calls[0]?.[0]).toMatch(/^\[vlmkit:runtime\] session 'loud': device (cpu|cuda) \(auto: /);
    } finally {
      spy.mockRestore();
      vi.unstubAllEnvs();
    }
  });

  it.skipIf(cudaInstalled)('explicit cuda without the EP binaries throws CUDA_UNAVAILABLE with the install hint', async () => {
    const e = await rejection(createSession(affineModel(), { device: 'cuda', name: 'vision' }));
    expect(e.code).toBe('CUDA_UNAVAILABLE');
    expect(e.session).toBe('vision');
    expect(e.message).toContain(`Session 'vision': device 'cuda' was requested but CUDA EP binaries not found in ${ortBindingDir()}`);
    expect(e.message).toContain('--onnxruntime-node-install=cuda12');
    expect(e.message).toContain('com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9');
  });

  // Play a machine whose probe says "binaries and GPU present" while ORT's
  // binding dir really lacks them, so the CUDA EP fails to start in ORT.
  const lyingFacts = {
    binaries: { dir: ortBindingDir(), present: true, missing: [] },
    gpu: () => ({ found: true, evidence: 'test says so' }),
  };

  it.skipIf(cudaInstalled)('auto falls back to cpu when the CUDA EP fails to start, and says so', async () => {
    const s = await openSession(affineModel(), { name: 'fallback' }, lyingFacts);
    expect(s.device).toBe('cpu');
    expect(s.deviceReason).toMatch(/^auto: the CUDA EP failed to start \(.*Cuda.*\); using CPU$/);
    const out = await s.run({ x: float32([1, 2, 3, 4], [1, 4]) });
    expect(Array.from(out.y!.data as Float32Array)).toEqual([3, 5, 7, 9]);
    await s.release();
  });

  it.skipIf(cudaInstalled)('explicit cuda whose EP fails to start throws CUDA_UNAVAILABLE with ORT message and hint', async () => {
    const e = await rejection(openSession(affineModel(), { name: 'strict', device: 'cuda' }, lyingFacts));
    expect(e.code).toBe('CUDA_UNAVAILABLE');
    expect(e.message).toMatch(/^Session 'strict': the CUDA EP failed to start: .*Failed to load shared library/);
    expect(e.message).toContain('--onnxruntime-node-install=cuda12');
  });
});

describe('ORT failures', () => {
  it('re-throws a run-time failure with the session and node names', async () => {
    const s = await createSession(impossibleReshapeModel(), { device: 'cpu', name: 'decoder' });
    const e = await rejection(s.run({ x: float32(new Float32Array(8), [2, 4]) }));
    expect(e.code).toBe('ORT_RUN_FAILED');
    expect(e.session).toBe('decoder');
    expect(e.node).toBe('blocks.0.attn/reshape');
    expect(e.message).toMatch(/^Session 'decoder' failed to run at node 'blocks\.0\.attn\/reshape': .*cannot be reshaped/);
    expect(e.cause).toBeInstanceOf(Error);
    await s.release();
  });

  it('re-throws load failures: bad bytes, missing file, bad node, bf16 I/O', async () => {
    const bad = await rejection(createSession(new Uint8Array([1, 2, 3, 4]), { device: 'cpu' }));
    expect(bad.code).toBe('ORT_LOAD_FAILED');
    expect(bad.message).toBe("Session 'model' could not be loaded: Failed to load model because protobuf parsing failed.");

    const missing = await rejection(createSession('/nonexistent/dir/vision.onnx', { device: 'cpu' }));
    expect(missing.session).toBe('vision.onnx');
    expect(missing.message).toMatch(/^Session 'vision.onnx' could not be loaded: .*File doesn't exist/);

    const noOp = modelBytes({
      nodes: [node('NoSuchOp', 'blocks.2/foo', ['x'], ['y'])],
      inputs: [valueInfo('x', 'float32', [1])],
      outputs: [valueInfo('y', 'float32', [1])],
    });
    const op = await rejection(createSession(noOp, { device: 'cpu', name: 'bad-op' }));
    expect(op.node).toBe('blocks.2/foo');
    expect(op.message).toMatch(/^Session 'bad-op' could not be loaded at node 'blocks\.2\/foo': .*No Op registered for NoSuchOp/);

    const bf16 = await rejection(createSession(identityModel('bfloat16'), { device: 'cpu' }));
    expect(bf16.message).toContain('Unsupported data type: 16');
    expect(bf16.message).toContain('keep I/O in float32/float16 and Cast inside the graph');
  });
});

describe('CUDA TF32 choice (NVIDIA_TF32_OVERRIDE)', () => {
  it('default: float32 stays float32: sets NVIDIA_TF32_OVERRIDE=0 before the first CUDA session', () => {
    const env: NodeJS.ProcessEnv = {};
    const state = {};
    expect(cudaTf32('m', false, env, state)).toBe(false);
    expect(env.NVIDIA_TF32_OVERRIDE).toBe('0');
    expect(cudaTf32('m2', false, env, state)).toBe(false);
  });

  it('tf32: true leaves the variable unset; a later session asking for strict float32 is refused by name', () => {
    const env: NodeJS.ProcessEnv = {};
    const state = {};
    expect(cudaTf32('m', true, env, state)).toBe(true);
    expect(env.NVIDIA_TF32_OVERRIDE).toBeUndefined();
    expect(() => cudaTf32('decoder', false, env, state)).toThrow(
      /Session 'decoder': tf32: false differs from this process's first CUDA session/,
    );
  });

  it("a user's NVIDIA_TF32_OVERRIDE=0 wins and tf32: true is refused; another value allows TF32", () => {
    expect(() => cudaTf32('m', true, { NVIDIA_TF32_OVERRIDE: '0' }, {})).toThrow(/NVIDIA_TF32_OVERRIDE=0 is set in the environment/);
    expect(cudaTf32('m', false, { NVIDIA_TF32_OVERRIDE: '0' }, {})).toBe(false);
    expect(cudaTf32('m', true, { NVIDIA_TF32_OVERRIDE: '1' }, {})).toBe(true);
  });
});

describe('ORT session options', () => {
  it("defaults: no memory pattern (a decoder's per-step shapes each cached a plan, issue 10), no prepacking, quiet ORT", () => {
    const o = ortSessionOptions({}, false);
    expect(o.enableMemPattern).toBe(false);
    expect(o.extra).toEqual({ session: { disable_prepacking: '1' } });
    expect(o.logSeverityLevel).toBe(4);
    expect(o.enableCpuMemArena).toBeUndefined();
  });

  it("externalDataFolder becomes ORT's folder for a model given as bytes, beside no prepacking", () => {
    expect(ortSessionOptions({ externalDataFolder: '/data' }, false).extra).toEqual({
      session: { disable_prepacking: '1', model_external_initializers_file_folder_path: '/data' },
    });
    expect(ortSessionOptions({ externalDataFolder: '/data', prepack: true }, false).extra).toEqual({
      session: { model_external_initializers_file_folder_path: '/data' },
    });
  });

  it('each option reaches ORT', () => {
    const o = ortSessionOptions(
      { memoryPattern: true, prepack: true, cpuMemArena: false, threads: 3, graphOptimizationLevel: 'basic' },
      true,
    );
    expect(o.enableMemPattern).toBe(true);
    expect(o.extra).toBeUndefined();
    expect(o.enableCpuMemArena).toBe(false);
    expect(o.intraOpNumThreads).toBe(3);
    expect(o.graphOptimizationLevel).toBe('basic');
    expect(o.logSeverityLevel).toBe(2);
  });
});
