// The browser's sessions, run in Node: onnxruntime-web's WASM backend (its Node build) through the browser's
// platform module, on a model onnx-graph builds and serialises in memory, against onnxruntime-node.
import ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import type { RuntimeError } from './errors.js';
import { sessionBackend as browserBackend } from './platform.browser.js';
import { createSession, createSessionOn, type ModelSource, type SessionOptions } from './session.js';
import { float32, type HostTensor, hostTensor } from './tensor.js';
import { Graph, lazyTensor, serializeModel, tensorFromArray, tensorFromSource } from './test-utils/onnx-graph.js';
import { type GpuLike, probeWebGpu, type WebOrt, webBackend } from './web-session.js';

function randn(n: number, seed: number): Float32Array {
  let s = seed;
  const next = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  return Float32Array.from({ length: n }, () => Math.sqrt(-2 * Math.log(next() + 1e-12)) * Math.cos(2 * Math.PI * next()));
}

/** y = softmax(x @ w1 + b) @ w2 and its logits: w1 lazy, b read through a source, w2 plain data. */
function build(): { g: Graph; reads: () => number } {
  let reads = 0;
  const bias = randn(16, 2);
  const blob = new Uint8Array(7 + bias.byteLength);
  blob.set(new Uint8Array(bias.buffer), 7);
  const source = {
    name: 'https://example.test/b.bin',
    stamp: '1',
    read: async (offset: number, length: number) => {
      reads++;
      return blob.slice(offset, offset + length);
    },
  };
  const g = new Graph({ name: 'web' });
  const x = g.input('x', 'float32', ['batch', 8]);
  const logits = g.add(
    g.matmul(
      x,
      g.initializer(
        'w1',
        lazyTensor('float32', [8, 16], async () => randn(128, 1)),
      ),
    ),
    g.initializer('b', tensorFromSource('float32', [16], source, 7, 64)),
  );
  g.output(logits, 'logits');
  g.output(g.matmul(g.softmax(logits, -1), g.initializer('w2', tensorFromArray('float32', [16, 4], randn(64, 3)))), 'y');
  return { g, reads: () => reads };
}

function maxAbsDiff(a: HostTensor | undefined, b: HostTensor | undefined): number {
  expect(a?.dims).toEqual(b?.dims);
  const x = a!.data as Float32Array;
  const y = b!.data as Float32Array;
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i]! - y[i]!));
  return m;
}

async function rejection(p: Promise<unknown>): Promise<RuntimeError> {
  try {
    await p;
  } catch (e) {
    return e as RuntimeError;
  }
  throw new Error('expected a rejection');
}

const x = float32(randn(3 * 8, 4), [3, 8]);
const noGpu = () => ({ gpu: undefined, crossOriginIsolated: false });
const gpuWith = (adapter: Awaited<ReturnType<GpuLike['requestAdapter']>>) => () => ({
  gpu: { requestAdapter: async () => adapter },
  crossOriginIsolated: false,
});

describe('web sessions (onnxruntime-web WASM, in Node)', () => {
  it('run a model serialised in memory (inline, and with external buffers) as onnxruntime-node does, to 1e-6 relative', async () => {
    const { g, reads } = build();
    const inline = await serializeModel(g);
    const split = await serializeModel(g, { externalThreshold: 64 });
    expect(reads()).toBe(2);
    expect(split.externalData.map((e) => e.path)).toEqual(['initializer_0.bin', 'initializer_1.bin', 'initializer_2.bin']);
    // The first web session of this process: 2 threads asked, but Node is no cross-origin isolated page.
    const web = await createSessionOn(browserBackend, inline, { name: 'inline', threads: 2 });
    expect(web.device).toBe('wasm');
    expect(web.deviceReason).toMatch(
      /^auto: navigator\.gpu is undefined .*; WASM, 1 WASM thread, not the 2 asked for \(the page is not cross-origin isolated/,
    );
    const webSplit = await createSessionOn(browserBackend, split, { name: 'split' });
    const node = await createSession(split, { device: 'cpu', name: 'node' });
    const a = await web.run({ x });
    const b = await webSplit.run({ x });
    const c = await node.run({ x });
    for (const name of ['logits', 'y']) {
      expect(maxAbsDiff(a[name], b[name])).toBe(0);
      // Not bit for bit: WASM's SIMD MatMul sums in another order than MLAS's AVX kernels (measured: ~1 ulp).
      const scale = Math.max(...Array.from(c[name]!.data as Float32Array, Math.abs));
      expect(maxAbsDiff(a[name], c[name])).toBeLessThanOrEqual(1e-6 * scale);
    }
    // The numbers are the model's, not zeros: a softmax-weighted mix of w2's rows differs per row of x.
    expect(
      maxAbsDiff(float32((a.y!.data as Float32Array).slice(0, 4), [4]), float32((a.y!.data as Float32Array).slice(4, 8), [4])),
    ).toBeGreaterThan(1e-3);
    await Promise.all([web.release(), webSplit.release(), node.release()]);
  });

  it("take the model's bytes with external data in the options, and onnxruntime-web's own tensors as feeds", async () => {
    const { bytes, externalData } = await serializeModel(build().g, { externalThreshold: 64 });
    const s = await createSessionOn(browserBackend, bytes, { externalData, device: 'cpu' });
    expect(s.device).toBe('wasm');
    expect(s.deviceReason).toMatch(/^cpu requested: WASM \(onnxruntime-web's CPU backend\), 1 WASM thread/);
    const host = await s.run({ x });
    const own = await s.run({ x: new ortWeb.Tensor('float32', x.data, [3, 8]) });
    expect(maxAbsDiff(host.y, own.y)).toBe(0);
    await s.release();
  });

  it("'auto' without a WebGPU adapter, or whose WebGPU fails, runs on WASM and says why; 'webgpu' refuses", async () => {
    const model: ModelSource = await serializeModel(build().g);
    const open = (facts: Parameters<typeof webBackend>[1], opts: SessionOptions) => createSessionOn(webBackend(ortWeb, facts), model, opts);
    const none = await open(gpuWith(null), {});
    expect(none.deviceReason).toMatch(/^auto: navigator\.gpu\.requestAdapter\(\) gave no adapter; WASM/);
    // An adapter, but onnxruntime-web's Node build has no WebGPU backend: 'auto' falls back with ORT's message.
    const failing = await open(gpuWith({ info: { vendor: 'test', architecture: 'fake' } }), {});
    expect(failing.device).toBe('wasm');
    expect(failing.deviceReason).toMatch(/^auto: the WebGPU backend failed \(.+\); WASM/);
    await Promise.all([none.release(), failing.release()]);

    const e1 = await rejection(open(noGpu, { device: 'webgpu', name: 'gpu' }));
    expect(e1.code).toBe('WEBGPU_UNAVAILABLE');
    expect(e1.message).toMatch(/^Session 'gpu': device 'webgpu' was requested but navigator\.gpu is undefined .*; use device 'wasm'/);
    const e2 = await rejection(open(gpuWith({}), { device: 'webgpu', name: 'gpu' }));
    expect(e2.code).toBe('ORT_LOAD_FAILED');
    const e3 = await rejection(open(noGpu, { device: 'cuda', name: 'c' }));
    expect(e3.code).toBe('INVALID_OPTIONS');
    expect(e3.message).toBe(
      "Session 'c': device must be 'auto', 'cpu', 'wasm' or 'webgpu', got 'cuda' (CUDA needs onnxruntime-node, in Node; in the browser use WebGPU).",
    );
    const e4 = await rejection(open(noGpu, { externalDataFolder: '/models' }));
    expect(e4.code).toBe('INVALID_OPTIONS');
    expect(e4.message).toMatch(/pass the external data as buffers/);
  });

  it('probeWebGpu names the adapter and its features, or why there is none', async () => {
    const gpu = (adapter: Awaited<ReturnType<GpuLike['requestAdapter']>>): GpuLike => ({ requestAdapter: async () => adapter });
    expect(
      await probeWebGpu(
        gpu({ info: { vendor: 'google', architecture: 'swiftshader' }, features: new Set(['timestamp-query', 'shader-f16']) }),
      ),
    ).toEqual({
      found: true,
      evidence: 'WebGPU adapter (google swiftshader)',
      features: ['shader-f16', 'timestamp-query'],
    });
    expect(await probeWebGpu(gpu(null))).toMatchObject({ found: false, evidence: 'navigator.gpu.requestAdapter() gave no adapter' });
    const failing: GpuLike = {
      requestAdapter: async () => {
        throw new Error('blocked');
      },
    };
    expect(await probeWebGpu(failing)).toMatchObject({ found: false, evidence: 'navigator.gpu.requestAdapter() failed: blocked' });
    // Node 20 has no navigator.gpu: the page's default finds none.
    expect(await probeWebGpu()).toMatchObject({ found: false, evidence: expect.stringMatching(/^navigator\.gpu is undefined/) });
  });

  it('Node refuses the browser devices by name', async () => {
    const e = await rejection(createSession(await serializeModel(build().g), { device: 'webgpu', name: 'n' }));
    expect(e.code).toBe('INVALID_OPTIONS');
    expect(e.message).toMatch(/got 'webgpu' \(a browser device, onnxruntime-web; in Node use cpu or cuda\)/);
  });

  it('wraps a model onnxruntime-web cannot load in ORT_LOAD_FAILED with the session name', async () => {
    const e = await rejection(createSessionOn(browserBackend, new Uint8Array([1, 2, 3]), { name: 'junk' }));
    expect(e.code).toBe('ORT_LOAD_FAILED');
    expect(e.session).toBe('junk');
  });
});

it('onnxruntime-node and onnxruntime-web have the same Tensor API (both onnxruntime-common)', () => {
  const data = Float32Array.of(1, 2, 3, 4);
  const n = new ortNode.Tensor('float32', data, [2, 2]);
  const w = new ortWeb.Tensor('float32', data, [2, 2]);
  expect([w.type, w.dims, w.location, w.data]).toEqual([n.type, n.dims, n.location, n.data]);
});

/**
 * onnxruntime-web whose 'webgpu' sessions are WASM ones (Node has no WebGPU), on a device that reports `errors`
 * from its validation scopes: the WebGPU branch of the device rule and the run guard, run in Node.
 */
function playedWebGpu(errors: (string | null)[] = []): { ort: WebOrt; scopes: () => number } {
  let open = 0;
  const device = {
    pushErrorScope: () => void open++,
    popErrorScope: async () => {
      open--;
      const m = errors.shift() ?? null;
      return m === null ? null : { message: m };
    },
  };
  return {
    ort: {
      Tensor: ortWeb.Tensor,
      env: { wasm: ortWeb.env.wasm, webgpu: { device } },
      InferenceSession: {
        create: (model, options) => {
          const wasm = { ...options, executionProviders: ['wasm'] };
          return typeof model === 'string' ? ortWeb.InferenceSession.create(model, wasm) : ortWeb.InferenceSession.create(model, wasm);
        },
      },
    },
    scopes: () => open,
  };
}

function half(): Graph {
  const g = new Graph({ name: 'half' });
  const h = g.input('h', 'float16', [3]);
  g.output(g.add(h, h), 'y');
  return g;
}

describe('web sessions on a WebGPU adapter without shader-f16', () => {
  const adapter = (features: string[]) => gpuWith({ info: { vendor: 'google', architecture: 'swiftshader' }, features });
  const open = (ort: WebOrt, features: string[], opts: SessionOptions, g: Graph) =>
    serializeModel(g).then((m) => createSessionOn(webBackend(ort, adapter(features)), m, opts));

  it("'auto' runs a float16 graph (compute dtype, or float16 inputs) on WASM and says why; 'webgpu' refuses", async () => {
    const { ort } = playedWebGpu();
    const a = await open(ort, ['timestamp-query'], { computeDtype: 'float16' }, build().g);
    expect(a.device).toBe('wasm');
    expect(a.deviceReason).toMatch(
      /^auto: WebGPU adapter \(google swiftshader\) has no 'shader-f16' feature, which a float16 graph needs; WASM/,
    );
    const b = await open(ort, [], {}, half());
    expect(b.device).toBe('wasm');
    expect(b.deviceReason).toMatch(/has no 'shader-f16' feature, and the model's inputs or outputs are float16; WASM/);
    const y = await b.run({ h: hostTensor('float16', Uint16Array.of(0x3c00, 0x4000, 0xb800), [3]) });
    expect(Array.from(y.y!.data as Uint16Array)).toEqual([0x4000, 0x4400, 0xbc00]); // 2, 4, -1
    const e = await rejection(open(ort, [], { device: 'webgpu', name: 'h' }, half()));
    expect(e.code).toBe('WEBGPU_UNAVAILABLE');
    expect(e.message).toMatch(/^Session 'h': device 'webgpu' was requested but WebGPU adapter .* has no 'shader-f16' feature/);
    // With the feature, the same graph goes to WebGPU.
    const c = await open(ort, ['shader-f16'], {}, half());
    expect(c.device).toBe('webgpu');
    await Promise.all([a.release(), b.release(), c.release()]);
  });

  it('a run during which the device reports a validation error fails with it instead of returning its outputs', async () => {
    const played = playedWebGpu([null, 'Invalid ShaderModule "Add"\n - While calling [Device].CreateShaderModule']);
    const s = await createSessionOn(webBackend(played.ort, adapter(['shader-f16'])), await serializeModel(build().g), { name: 'g' });
    expect(s.device).toBe('webgpu');
    const ok = await s.run({ x });
    expect(ok.y?.dims).toEqual([3, 4]);
    const e = await rejection(s.run({ x }));
    expect(e.code).toBe('ORT_RUN_FAILED');
    expect(e.message).toMatch(
      /Session 'g'.*the WebGPU device refused the run's work \(its outputs would be wrong\): Invalid ShaderModule "Add"$/,
    );
    expect(played.scopes()).toBe(0);
    await s.release();
  });
});
