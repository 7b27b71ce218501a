import { ModelError } from './errors.js';

export interface SamplingOptions {
  /** 0 (default) is greedy: argmax, ties to the lowest id as torch.argmax does. */
  temperature?: number;
  /** Keep the k most likely tokens (0 or undefined: all). */
  topK?: number;
  /** Keep the smallest set of tokens whose probability reaches p (1 or undefined: all). */
  topP?: number;
  /** Seed of the sampler's random stream, an integer in [0, 2**32 - 1]; the same seed gives the same tokens. */
  seed?: number;
}

/** The largest seed: the sampler's state is 32 bits. */
export const MAX_SEED = 0xffff_ffff;

/** A small, fast, seedable PRNG (mulberry32): reproducible sampling without global state. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function validateSampling(o: SamplingOptions): void {
  const bad = (why: string) => new ModelError('BAD_GENERATION_OPTIONS', why);
  const show = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : String(v));
  if (o.temperature !== undefined && !(typeof o.temperature === 'number' && o.temperature >= 0 && Number.isFinite(o.temperature)))
    throw bad(`temperature must be a finite number >= 0, got ${show(o.temperature)}`);
  if (o.topK !== undefined && !(Number.isInteger(o.topK) && o.topK >= 0)) throw bad(`topK must be an integer >= 0, got ${show(o.topK)}`);
  if (o.topP !== undefined && !(typeof o.topP === 'number' && o.topP > 0 && o.topP <= 1))
    throw bad(`topP must be in (0, 1], got ${show(o.topP)}`);
  // The seed is the sampler's 32-bit state: a fraction, a negative or a larger number would be wrapped to some
  // other seed without a word (2**32 + 1 would sample as 1), so only the seeds it holds exactly are taken.
  if (o.seed !== undefined && !(Number.isInteger(o.seed) && o.seed >= 0 && o.seed <= MAX_SEED))
    throw bad(`seed must be an integer in [0, ${MAX_SEED}] (the sampler's 32-bit state), got ${show(o.seed)}`);
}

export function argmax(logits: Float32Array, offset = 0, length = logits.length - offset): number {
  let best = 0;
  let bestV = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < length; i++) {
    const v = logits[offset + i]!;
    if (v > bestV) {
      bestV = v;
      best = i;
    }
  }
  return best;
}

/**
 * Picks the next token from one row of logits. Greedy when temperature is 0;
 * otherwise softmax(logits / T) filtered by top-k then top-p (the order HF's
 * logits processors apply), sampled with `random`.
 */
export function sampleToken(
  logits: Float32Array,
  o: SamplingOptions,
  random: () => number,
  offset = 0,
  length = logits.length - offset,
): number {
  const t = o.temperature ?? 0;
  if (t === 0) return argmax(logits, offset, length);
  const idx = Array.from({ length }, (_, i) => i);
  idx.sort((a, b) => logits[offset + b]! - logits[offset + a]! || a - b);
  const k = o.topK && o.topK > 0 ? Math.min(o.topK, length) : length;
  const kept = idx.slice(0, k);
  // (l - max) / T, not l / T - max / T: with a tiny T (say 1e-310) l / T overflows to Infinity and Inf - Inf is NaN,
  // which once sampled the least likely token. The difference form tends to greedy as T -> 0, as the math does.
  const maxL = logits[offset + kept[0]!]!;
  let probs = kept.map((i) => Math.exp((logits[offset + i]! - maxL) / t));
  let z = probs.reduce((a, b) => a + b, 0);
  probs = probs.map((p) => p / z);
  const p = o.topP ?? 1;
  let n = probs.length;
  if (p < 1) {
    let acc = 0;
    for (let i = 0; i < probs.length; i++) {
      acc += probs[i]!;
      if (acc >= p) {
        n = i + 1;
        break;
      }
    }
  }
  z = probs.slice(0, n).reduce((a, b) => a + b, 0);
  let r = random() * z;
  for (let i = 0; i < n; i++) {
    r -= probs[i]!;
    if (r <= 0) return kept[i]!;
  }
  return kept[n - 1]!;
}
