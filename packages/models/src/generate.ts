import { ModelError } from './errors.js';
import { type SamplingOptions, sampleToken, seededRandom, validateSampling } from './sampling.js';

export interface GenerateOptions extends SamplingOptions {
  maxNewTokens: number;
  /** Token id(s) that end a row; the row then emits `padTokenId` until every row is done. */
  eos?: number | readonly number[];
  padTokenId?: number;
  /**
   * Called after each step with the new token of every row (streaming). A returned promise is
   * awaited before the next step: a consumer can hold generation back (backpressure).
   */
  onToken?: (tokens: readonly number[], step: number) => unknown;
  /** Stops generation before the next step once aborted; the tokens so far are returned. */
  signal?: AbortSignal | undefined;
  /** Called with each step's logits [B * V] before its tokens are sampled (HF generate's `output_scores`); host loop only. */
  onLogits?: ((logits: Float32Array, step: number) => void) | undefined;
}

/** One model's decode steps, seen from the sampling loop. */
export interface DecodeSteps {
  readonly batchSize: number;
  readonly vocabSize: number;
  /** Runs the prompt; returns the last position's logits per row, [B * V]. */
  prefill(): Promise<Float32Array>;
  /** Feeds one token per row; returns the next logits, [B * V]. */
  step(tokens: readonly number[]): Promise<Float32Array>;
}

export interface GenerateResult {
  /** New tokens only, [B][steps]. */
  tokens: number[][];
  /** Milliseconds for the prompt and for each decode step. */
  timings: { prefillMs: number; stepMs: number[] };
  /** Set when the model's context allowed fewer new tokens than asked (a batching engine): that many. */
  maxNewTokens?: number;
}

/**
 * Checks generation options before anything runs (a KV cache sized by maxNewTokens, the vision encoder):
 * maxNewTokens an integer >= 0, the sampling options, and eos / padTokenId ids of the vocabulary (an eos
 * outside it could never be generated, so rows would run to maxNewTokens; a pad outside it is not a token).
 */
export function validateGenerateOptions(o: GenerateOptions, vocabSize: number): void {
  const bad = (why: string) => new ModelError('BAD_GENERATION_OPTIONS', why);
  const show = (v: unknown): string =>
    typeof v === 'string' ? JSON.stringify(v) : Array.isArray(v) ? `[${v.map(show).join(', ')}]` : String(v);
  if (!Number.isInteger(o.maxNewTokens) || o.maxNewTokens < 0)
    throw bad(`maxNewTokens must be an integer >= 0, got ${show(o.maxNewTokens)}`);
  validateSampling(o);
  const isId = (v: unknown) => Number.isInteger(v) && (v as number) >= 0 && (v as number) < vocabSize;
  if (o.eos !== undefined && !(typeof o.eos === 'number' ? isId(o.eos) : Array.isArray(o.eos) && o.eos.every(isId)))
    throw bad(`eos must be a token id or a list of them, integers in [0, ${vocabSize}) (the vocabulary), got ${show(o.eos)}`);
  if (o.padTokenId !== undefined && !isId(o.padTokenId))
    throw bad(`padTokenId must be a token id, an integer in [0, ${vocabSize}) (the vocabulary), got ${show(o.padTokenId)}`);
}

/** The sampling loop shared by every model: prefill, then one token per row per step. */
export async function generateTokens(steps: DecodeSteps, o: GenerateOptions): Promise<GenerateResult> {
  validateGenerateOptions(o, steps.vocabSize);
  const eos = new Set(o.eos === undefined ? [] : typeof o.eos === 'number' ? [o.eos] : o.eos);
  const pad = o.padTokenId ?? 0;
  const random = seededRandom(o.seed ?? 0);
  const B = steps.batchSize;
  const V = steps.vocabSize;
  const tokens: number[][] = Array.from({ length: B }, () => []);
  const done = new Array<boolean>(B).fill(false);
  const stepMs: number[] = [];
  if (o.maxNewTokens === 0 || o.signal?.aborted) return { tokens, timings: { prefillMs: 0, stepMs } };
  let t0 = performance.now();
  let logits = await steps.prefill();
  const prefillMs = performance.now() - t0;
  for (let n = 0; n < o.maxNewTokens; n++) {
    o.onLogits?.(logits, n);
    const next = Array.from({ length: B }, (_, b) => (done[b] ? pad : sampleToken(logits, o, random, b * V, V)));
    next.forEach((t, b) => {
      tokens[b]!.push(t);
      if (eos.has(t)) done[b] = true;
    });
    await o.onToken?.(next, n);
    if (n === o.maxNewTokens - 1 || done.every(Boolean) || o.signal?.aborted) break;
    t0 = performance.now();
    logits = await steps.step(next);
    stepMs.push(performance.now() - t0);
  }
  return { tokens, timings: { prefillMs, stepMs } };
}
