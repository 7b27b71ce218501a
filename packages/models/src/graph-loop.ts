// Generation on the in-graph decode loop (moe-decoder's `buildDecodeLoopModel`): the session makes up to a
// chunk of tokens per run and returns the state the next run starts from. Same results and streaming
// semantics as the host loop (generate.ts `generateTokens`): eos, pad, maxNewTokens, the seeded sampler's
// draws, onToken per step, abort between steps.
import { DECODE_LOOP_IO, KV_CACHE_IO } from '@vlmkit/moe-decoder';
import { bool, type HostTensor, hostTensor, int64 } from '@vlmkit/runtime';
import { ModelError } from './errors.js';
import { type GenerateOptions, type GenerateResult, validateGenerateOptions } from './generate.js';
import { seededRandom } from './sampling.js';

/** Where the generation loop runs: 'host' (one session run per token, in TypeScript) or 'graph' (an ONNX Loop). */
export type DecodeLoop = 'host' | 'graph';
export const DECODE_LOOPS: readonly DecodeLoop[] = ['host', 'graph'];

/** Tokens per session run of the in-graph loop unless `loopChunk` says otherwise. */
export const DEFAULT_LOOP_CHUNK = 16;

/** generate's options with the choice of loop. */
export interface ModelGenerateOptions extends GenerateOptions {
  /** The loop the model was loaded with (its profile's, default); asking for the other is a DECODE_LOOP_UNAVAILABLE error. */
  loop?: DecodeLoop | undefined;
  /**
   * 'graph' loop: tokens per session run after the first (which runs the prompt and makes one token), default
   * `DEFAULT_LOOP_CHUNK`. onToken is called for each step of a chunk once the chunk has run.
   */
  loopChunk?: number | undefined;
}

/** What the in-graph loop needs of a model: its decoder session's run, the first run's feeds and sizes. */
export interface GraphLoopRun {
  run(feeds: Record<string, HostTensor>): Promise<Record<string, HostTensor>>;
  /** The decoder's prompt feeds (ids, mask, the model's inputs, an empty concat KV cache). */
  prompt: Record<string, HostTensor>;
  /** Each row's position of the first generated token fed back (real tokens + the model's offset). */
  nextPositions: readonly number[];
  batchSize: number;
  vocabSize: number;
  numLayers: number;
}

export function validateLoopChunk(chunk: unknown): void {
  if (chunk !== undefined && !(Number.isInteger(chunk) && (chunk as number) >= 1))
    throw new ModelError('BAD_GENERATION_OPTIONS', `loopChunk must be an integer >= 1 (tokens per session run), got ${String(chunk)}`);
}

/** The sampling loop of `generateTokens`, run by the decoder's in-graph loop chunk by chunk. */
export async function generateInGraph(m: GraphLoopRun, o: GenerateOptions & { loopChunk?: number | undefined }): Promise<GenerateResult> {
  validateGenerateOptions(o, m.vocabSize);
  validateLoopChunk(o.loopChunk);
  const io = DECODE_LOOP_IO;
  const B = m.batchSize;
  const eos = new Set(o.eos === undefined ? [] : typeof o.eos === 'number' ? [o.eos] : o.eos);
  const pad = o.padTokenId ?? 0;
  const sampling = (o.temperature ?? 0) > 0;
  const random = seededRandom(o.seed ?? 0);
  const tokens: number[][] = Array.from({ length: B }, () => []);
  const done = new Array<boolean>(B).fill(false);
  const stepMs: number[] = [];
  if (o.maxNewTokens === 0 || o.signal?.aborted) return { tokens, timings: { prefillMs: 0, stepMs } };
  const fixed = {
    [io.eos]: int64([...eos], [eos.size]),
    [io.padTokenId]: int64([pad], []),
    [io.temperature]: float64([o.temperature ?? 0], []),
    [io.topK]: int64([o.topK ?? 0], []),
    [io.topP]: float64([o.topP ?? 1], []),
  };
  let state: Record<string, HostTensor> = {
    ...m.prompt,
    [io.nextPositions]: int64([...m.nextPositions], [B]),
    [io.done]: bool(new Uint8Array(B), [B]),
  };
  // The host sampler's stream: each run gets enough draws for all its steps; those it did not use come first next time.
  let pending: number[] = [];
  let prefillMs = 0;
  let n = 0;
  for (let run = 0; n < o.maxNewTokens; run++) {
    // The first run is the prompt and one token (prefillMs, as the host loop times it); then chunks.
    const K = run === 0 ? 1 : Math.min(o.loopChunk ?? DEFAULT_LOOP_CHUNK, o.maxNewTokens - n);
    const want = sampling ? K * B : 0;
    while (pending.length < want) pending.push(random());
    const t0 = performance.now();
    const out = await m.run({ ...state, ...fixed, [io.maxTokens]: int64([K], []), [io.uniforms]: float64(pending.slice(0, want), [want]) });
    const ms = performance.now() - t0;
    pending = pending.slice(Number(out[io.draws]!.data[0]));
    const chunk = out[io.tokens]!;
    const [k, rows] = [chunk.dims[0]!, chunk.dims[1]!];
    if (rows !== B) throw new ModelError('BAD_INPUT', `the decode loop returned tokens for ${rows} rows, the batch has ${B}`);
    if (run === 0) prefillMs = ms;
    else for (let s = 0; s < k; s++) stepMs.push(ms / k);
    state = nextState(state, out, m.numLayers);
    const data = chunk.data as BigInt64Array;
    for (let s = 0; s < k; s++) {
      const next = Array.from(data.subarray(s * B, (s + 1) * B), Number);
      next.forEach((t, b) => {
        tokens[b]!.push(t);
        if (eos.has(t)) done[b] = true;
      });
      await o.onToken?.(next, n);
      n++;
      if (n === o.maxNewTokens || done.every(Boolean) || o.signal?.aborted) return { tokens, timings: { prefillMs, stepMs } };
    }
  }
  return { tokens, timings: { prefillMs, stepMs } };
}

/** The next run's feeds: every carried input from its `next.*` output, the KV cache from `present.*`. */
function nextState(state: Record<string, HostTensor>, out: Record<string, HostTensor>, numLayers: number): Record<string, HostTensor> {
  const next: Record<string, HostTensor> = {};
  const kv = new Map<string, string>();
  for (let i = 0; i < numLayers; i++)
    for (const kind of ['key', 'value'] as const) kv.set(KV_CACHE_IO.past(i, kind), KV_CACHE_IO.present(i, kind));
  for (const name of Object.keys(state)) {
    const from = kv.get(name) ?? DECODE_LOOP_IO.next(name);
    const t = out[from];
    if (t === undefined) throw new ModelError('BAD_INPUT', `the decode loop's output '${from}' (for '${name}') is missing`);
    next[name] = t;
  }
  return next;
}

function float64(values: readonly number[], dims: readonly number[]): HostTensor<'float64'> {
  return hostTensor('float64', Float64Array.from(values), dims);
}
