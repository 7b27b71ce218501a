// The page `pnpm bench:browser` drives (tools/bench/browser.mjs): a checkpoint loaded from a URL with
// loadPretrained(urlFiles(url)), then greedy generation on a prompt's HF forward kwargs, timed with
// performance.now() exactly as tools/bench/vlmkit_side.mjs times the Node side (one untimed generate, then
// `repeats` timed ones; vision, prefill and the median decode step of each, medians over the repeats).
import { type LoadProgress, loadPretrained, type PretrainedModel, type QuantizeChoice } from '@vlmkit/models';
import { Checkpoint, urlFiles, urlSource } from '@vlmkit/safetensors';
import { readTensors } from './checks/models.js';
import { configureWasm, ort } from './ort-web.js';

const log = document.getElementById('log')!;
/** A line in the page and on the console (the runner prints the page's console as progress). */
const note = (line: string) => {
  log.textContent += `${line}\n`;
  console.log(line);
};

// ORT's WASM heap is a WebAssembly.Memory its module creates in this thread (shared, for the threads) and
// grows, never shrinks: its final size is its peak, held against wasm32's 4 GiB. Noted as it is made.
const memories: { memory: WebAssembly.Memory; maximumPages: number | undefined }[] = [];
const NativeMemory = WebAssembly.Memory;
WebAssembly.Memory = function Memory(descriptor: WebAssembly.MemoryDescriptor) {
  const memory = new NativeMemory(descriptor);
  memories.push({ memory, maximumPages: descriptor.maximum });
  return memory;
} as unknown as typeof WebAssembly.Memory;
WebAssembly.Memory.prototype = NativeMemory.prototype;

/** The largest WebAssembly memory made so far (ORT's heap), in bytes. */
function wasmHeapBytes(): number {
  return Math.max(0, ...memories.map((m) => m.memory.buffer.byteLength));
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export interface BenchOptions {
  /** The checkpoint folder's URL (config.json, generation_config.json, *.safetensors). */
  model: string;
  /** The prompt's tensors (.safetensors of HF forward kwargs). */
  inputs: string;
  quantize?: QuantizeChoice;
  threads: number;
  newTokens: number;
  repeats: number;
}

/** What the browser says of this page's memory (Chromium: measureUserAgentSpecificMemory, isolated pages only). */
async function uaMemoryBytes(): Promise<number | null> {
  const perf = performance as Performance & { measureUserAgentSpecificMemory?: () => Promise<{ bytes: number }> };
  if (!perf.measureUserAgentSpecificMemory) return null;
  try {
    return (await perf.measureUserAgentSpecificMemory()).bytes;
  } catch {
    return null;
  }
}

/** loadPretrained from the URL, timed; `stages`: the end of each load step, ms since the start. */
async function timedLoad(o: BenchOptions): Promise<{ model: PretrainedModel; loadMs: number; stages: Record<string, number> }> {
  const stages: Record<string, number> = {};
  const t0 = performance.now();
  const onProgress = (p: LoadProgress) => {
    // A step reports at its start and its end (no detail), and within it (detail): the last report is its end.
    if (!p.detail) stages[`${p.stage} ${p.name}`] = performance.now() - t0;
  };
  const model = await loadPretrained(urlFiles(o.model), {
    device: 'wasm',
    ...(o.quantize ? { quantize: o.quantize } : {}),
    profile: { threads: o.threads },
    onProgress,
  });
  const loadMs = performance.now() - t0;
  note(`loaded in ${(loadMs / 1000).toFixed(1)} s on ${model.device}: ${model.deviceReason}`);
  return { model, loadMs, stages };
}

const bench = {
  info() {
    return {
      userAgent: navigator.userAgent,
      crossOriginIsolated: globalThis.crossOriginIsolated,
      hardwareConcurrency: navigator.hardwareConcurrency,
    };
  },

  /**
   * Loads the checkpoint and times the generates. A fresh browser profile has no page graph cache: this load
   * reads the float32 checkpoint, quantizes and builds its graphs (and stores them where the page has a cache).
   */
  async run(o: BenchOptions) {
    configureWasm(o.threads);
    const { model, loadMs, stages } = await timedLoad(o);
    const heapAfterLoad = wasmHeapBytes();
    const inputs = await readTensors(await urlSource(o.inputs));
    const generate = () => model.generate(inputs, { maxNewTokens: o.newTokens, eos: [] });
    await generate();
    note('untimed generate done');
    const vision: number[] = [];
    const prefill: number[] = [];
    const decode: number[] = [];
    const perToken: number[] = [];
    const total: number[] = [];
    let ids: number[] = [];
    for (let r = 0; r < o.repeats; r++) {
      const t = performance.now();
      const gen = await generate();
      const ms = performance.now() - t;
      total.push(ms);
      vision.push(gen.visionMs);
      prefill.push(gen.timings.prefillMs);
      decode.push(median(gen.timings.stepMs));
      perToken.push((ms - gen.visionMs - gen.timings.prefillMs) / Math.max(gen.tokens[0]!.length - 1, 1));
      ids = gen.tokens[0]!;
      note(`generate ${r + 1}/${o.repeats}: vision ${gen.visionMs.toFixed(0)} ms, prefill ${gen.timings.prefillMs.toFixed(0)} ms`);
    }
    const result = {
      crossOriginIsolated: globalThis.crossOriginIsolated,
      wasmThreads: ort.env.wasm.numThreads ?? null,
      device: model.device,
      deviceReason: model.deviceReason,
      load_ms: loadMs,
      load_stages_ms: stages,
      timings: model.timings,
      vision_ms: median(vision),
      prefill_ms: median(prefill),
      decode_ms: median(decode),
      decode_per_token_ms: median(perToken),
      generate_ms: median(total),
      vision_runs_ms: vision,
      prefill_runs_ms: prefill,
      decode_runs_ms: decode,
      prompt_tokens: Number(inputs.input_ids!.dims[1]),
      ids,
      wasm_heap_after_load_bytes: heapAfterLoad,
      wasm_heap_bytes: wasmHeapBytes(),
      // The heap's declared maximum (64 KiB pages): wasm32 allows 65536, 4 GiB.
      wasm_heap_max_bytes: Math.max(0, ...memories.map((m) => (m.maximumPages ?? 0) * 65536)),
      ua_memory_bytes: await uaMemoryBytes(),
    };
    await model.release();
    return result;
  },

  /** Every tensor of the checkpoint read over HTTP and dropped, as a load reads them: the load's read time alone. */
  async read(o: BenchOptions) {
    const t0 = performance.now();
    const checkpoint = await Checkpoint.fromFiles(urlFiles(o.model));
    let bytes = 0;
    try {
      for (const name of checkpoint.names()) bytes += (await checkpoint.read(name)).data.byteLength;
    } finally {
      await checkpoint.close();
    }
    const ms = performance.now() - t0;
    note(`read ${(bytes / 2 ** 20).toFixed(0)} MiB of tensors in ${(ms / 1000).toFixed(1)} s`);
    return { read_ms: ms, read_bytes: bytes };
  },

  /** A second load in the same page (after `run`): what a reload of the page costs, graph cache or none. */
  async load(o: BenchOptions) {
    const { model, loadMs, stages } = await timedLoad(o);
    const result = { load_ms: loadMs, load_stages_ms: stages, timings: model.timings, wasm_heap_bytes: wasmHeapBytes() };
    await model.release();
    return result;
  },
};

export type Bench = typeof bench;
(globalThis as unknown as { vlmkitBench: Bench }).vlmkitBench = bench;
note('ready');
