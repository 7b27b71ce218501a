// The page `pnpm test:browser` drives (examples/web/test/run.mjs): each entry of window.vlmkitHarness runs one
// check in the browser and returns what the runner compares with Node's result of the same check.
import { loadPretrained, type PretrainedModel } from '@vlmkit/models';
import { decodeImage, Processor } from '@vlmkit/processors';
import { createSession, float32 } from '@vlmkit/runtime';
import { urlFiles, urlSource } from '@vlmkit/safetensors';
import { cacheCheck } from './checks/cache.js';
import {
  FIXTURE_LOAD,
  graphCases,
  type ModelCaseJson,
  type ModelCaseResult,
  MROPE_FIXTURES,
  type MropeResult,
  modelCase,
  mropePositions,
  PLACEMENT_END,
  type ProcessorCaseJson,
  processorCase,
  readFrames,
  readTensors,
  sha256,
  toWire,
  type WireTensor,
} from './checks/index.js';
import { configureWasm, probeWebGpu, withPlacementLog } from './ort-web.js';

const log = document.getElementById('log')!;
const note = (line: string) => {
  log.textContent += `${line}\n`;
};

/** Where the runner's server mounts test-fixtures/ (read-only). */
const FIXTURES = new URL('./fixtures/', document.baseURI);

async function fetchJson<T>(path: string): Promise<T> {
  const res = await fetch(new URL(path, FIXTURES));
  if (!res.ok) throw new Error(`GET ${res.url}: ${res.status} ${res.statusText}`);
  return (await res.json()) as T;
}

const processors = new Map<string, Promise<Processor>>();

/** A processor fixture folder's processor, read over HTTP through urlFiles (one per folder, reused). */
function processorFor(family: string): Promise<Processor> {
  let p = processors.get(family);
  if (!p) {
    p = Processor.fromPretrained(urlFiles(new URL(`processors/${family}/`, FIXTURES)));
    processors.set(family, p);
  }
  return p;
}

async function fetchBytes(path: string): Promise<Uint8Array> {
  const res = await fetch(new URL(path, FIXTURES));
  if (!res.ok) throw new Error(`GET ${res.url}: ${res.status} ${res.statusText}`);
  return new Uint8Array(await res.arrayBuffer());
}

/** The models loaded so far, by checkpoint and device: a checkpoint's cases share one load. */
const models = new Map<string, Promise<PretrainedModel>>();

export interface GraphResult {
  name: string;
  /** The device the session reports it runs on. */
  device: string;
  sha256: string;
  outputs: Record<string, WireTensor>;
}

const wasmThreads = configureWasm();

const harness = {
  info() {
    return {
      userAgent: navigator.userAgent,
      crossOriginIsolated: globalThis.crossOriginIsolated,
      hardwareConcurrency: navigator.hardwareConcurrency,
      wasmThreads,
    };
  },

  probeWebGpu,

  /** M-RoPE position ids of every HF rope-index fixture case. */
  async mrope(): Promise<MropeResult[]> {
    const out: MropeResult[] = [];
    for (const file of MROPE_FIXTURES) out.push(...mropePositions(file, await fetchJson(`mrope/${file}`)));
    note(`mrope: ${out.length} cases`);
    return out;
  },

  /**
   * One processor case (test-fixtures/processors/<family>/cases/<name>): the processor files over HTTP, the
   * JS tokenizer, images decoded by the browser from their files' bytes, a video as its decoded frames.
   */
  async processorCase(family: string, name: string): Promise<Record<string, WireTensor>> {
    const c = await fetchJson<ProcessorCaseJson>(`processors/${family}/cases/${name}/case.json`);
    const out = await processorCase(await processorFor(family), c, {
      image: (path) => fetchBytes(`processors/${path}`),
      frames: async () => readFrames(await urlSource(new URL('processors/video/frames.safetensors', FIXTURES))),
    });
    note(`processor ${family}/${name}: ${Object.keys(out).join(', ')}`);
    return out;
  },

  /**
   * One model fixture case (test-fixtures/<model>/cases/<name>): the checkpoint read over HTTP with range
   * requests (urlFiles), its graphs built in the page and run on onnxruntime-web; forward's logits and greedy ids.
   */
  async modelCase(model: string, name: string, device: 'wasm' | 'webgpu'): Promise<ModelCaseResult & { loadMs: number }> {
    const c = await fetchJson<ModelCaseJson>(`${model}/cases/${name}/case.json`);
    const key = `${c.checkpoint}|${c.adapter ?? ''}|${device}`;
    let loading = models.get(key);
    const t = performance.now();
    if (!loading) {
      const adapter = c.adapter === undefined ? {} : { adapter: urlFiles(new URL(`${c.adapter}/`, FIXTURES)) };
      loading = loadPretrained(urlFiles(new URL(`${c.checkpoint}/`, FIXTURES)), { device, ...FIXTURE_LOAD, ...adapter });
      models.set(key, loading);
    }
    const m = await loading;
    const loadMs = performance.now() - t;
    const inputs = await readTensors(await urlSource(new URL(`${model}/cases/${name}/inputs.safetensors`, FIXTURES)));
    const out = await modelCase(m, inputs, c.max_new_tokens);
    note(`model ${model}/${name} (${m.device}): ${out.ids.map((r) => r.join(' ')).join(' | ')}`);
    return { ...out, loadMs };
  },

  /**
   * Loads a fixture case's checkpoint on WebGPU with ORT logging where each node of its sessions is placed;
   * the runner reads those console lines. Released at once.
   */
  async placement(model: string, name: string, quantize?: 'int4'): Promise<string> {
    const c = await fetchJson<ModelCaseJson>(`${model}/cases/${name}/case.json`);
    const m = await withPlacementLog(() =>
      loadPretrained(urlFiles(new URL(`${c.checkpoint}/`, FIXTURES)), {
        device: 'webgpu',
        ...FIXTURE_LOAD,
        ...(quantize ? { quantize } : {}),
        cacheDir: 'none',
      }),
    );
    const device = m.device;
    await m.release();
    // The runner reads the console up to this line: console events reach it after the call has returned.
    console.log(PLACEMENT_END);
    return device;
  },

  /** Releases every loaded model (their sessions' WASM or GPU memory). */
  async releaseModels(): Promise<void> {
    const all = [...models.values()];
    models.clear();
    for (const m of await Promise.allSettled(all)) if (m.status === 'fulfilled') await m.value.release();
  },

  /**
   * One image of test-fixtures/processors/image-processors/decode, decoded by the processors' browser decoder
   * from its bytes: the RGB bytes, or the refusal's code and message.
   */
  async decodeImage(name: string): Promise<{ width: number; height: number; rgb: WireTensor } | { error: string; code: string }> {
    const bytes = await fetchBytes(`processors/image-processors/decode/${name}`);
    try {
      const image = await decodeImage(bytes, { name });
      return { width: image.width, height: image.height, rgb: toWire(image.data, [image.height, image.width, 3]) };
    } catch (err) {
      return { error: err instanceof Error ? err.message : String(err), code: String((err as { code?: unknown }).code ?? '') };
    }
  },

  /** The page graph cache (OPFS): a second load of ERNIE-tiny reads no tensor and gives the same logits. */
  cache: () => cacheCheck(FIXTURES),

  /** Graphs built in the page by @vlmkit/onnx-graph, serialized in memory, run by @vlmkit/runtime on onnxruntime-web. */
  async graphs(device: 'wasm' | 'webgpu' = 'wasm'): Promise<GraphResult[]> {
    const results: GraphResult[] = [];
    for (const c of await graphCases()) {
      const session = await createSession(c.model, { device, name: c.name });
      try {
        const feeds = Object.fromEntries(Object.entries(c.feeds).map(([k, f]) => [k, float32(f.data, f.dims)]));
        const out = await session.run(feeds);
        const outputs = Object.fromEntries(Object.entries(out).map(([k, t]) => [k, toWire(t.data as Float32Array, t.dims)]));
        results.push({ name: c.name, device: session.device, sha256: await sha256(c.model.bytes), outputs });
        note(`graph ${c.name} (${session.device}): ok`);
      } finally {
        await session.release();
      }
    }
    return results;
  },
};

export type Harness = typeof harness;
(globalThis as unknown as { vlmkitHarness: Harness }).vlmkitHarness = harness;
note('ready');
