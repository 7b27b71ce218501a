import { type HostTensor, int64 } from '@vlmkit/runtime';
import { ModelError } from './errors.js';

/** The attention mask of a decode loop: the prompt's [B, S] (left padding kept), one real column more per step. */
export class GrowingMask {
  private data: number[];
  private width: number;

  constructor(
    prompt: ArrayLike<number | bigint>,
    private readonly batch: number,
    seq: number,
  ) {
    this.data = Array.from(prompt, Number);
    this.width = seq;
  }

  /** Appends a real column for the new tokens and returns the mask [B, width + 1]. */
  next(): HostTensor<'int64'> {
    const out: number[] = [];
    for (let b = 0; b < this.batch; b++) out.push(...this.data.slice(b * this.width, (b + 1) * this.width), 1);
    this.data = out;
    this.width += 1;
    return int64(out, [this.batch, this.width]);
  }
}

/**
 * The attention mask of a decode loop over a pre-allocated cache (KvCache with `capacity`): [B, capacity + 1],
 * the cache's slots then the new token. Slots hold the prompt (its left padding masked) and the tokens fed so
 * far; free slots are 0. One buffer, updated in place: a step marks the slot the previous token went to.
 */
export class SlotMask {
  private data: BigInt64Array;
  private filled: number;
  private pending = false;

  constructor(
    prompt: ArrayLike<number | bigint>,
    private readonly batch: number,
    seq: number,
    private capacity: number,
  ) {
    if (capacity < seq) throw new ModelError('BAD_INPUT', `SlotMask: capacity ${capacity} is below the prompt's ${seq} positions`);
    const width = capacity + 1;
    this.data = new BigInt64Array(batch * width);
    for (let b = 0; b < batch; b++) {
      for (let s = 0; s < seq; s++) this.data[b * width + s] = BigInt(prompt[b * seq + s]!);
      this.data[b * width + capacity] = 1n;
    }
    this.filled = seq;
  }

  /** Follows the cache to `capacity` slots (KvCache.reserve): the same slots, more free ones. */
  reserve(capacity: number): void {
    if (capacity < this.capacity) throw new ModelError('BAD_INPUT', `SlotMask: cannot shrink from ${this.capacity} to ${capacity} slots`);
    const [from, to] = [this.capacity + 1, capacity + 1];
    const data = new BigInt64Array(this.batch * to);
    for (let b = 0; b < this.batch; b++) {
      data.set(this.data.subarray(b * from, b * from + this.capacity), b * to);
      data[b * to + capacity] = 1n;
    }
    this.data = data;
    this.capacity = capacity;
  }

  /** The mask for the next token: every slot filled so far, then the token itself. */
  next(): HostTensor<'int64'> {
    const width = this.capacity + 1;
    // After the first call, the previous token was written to slot `filled`.
    if (this.pending) {
      if (this.filled >= this.capacity) throw new ModelError('BAD_INPUT', `SlotMask: all ${this.capacity} slots are used`);
      for (let b = 0; b < this.batch; b++) this.data[b * width + this.filled] = 1n;
      this.filled++;
    }
    this.pending = true;
    return int64(this.data, [this.batch, width]);
  }
}

/** The logits of each row's last position, [B * V], out of [B, seq, V]. */
export function lastPositionLogits(logits: HostTensor, batch: number, seq: number, vocab: number): Float32Array {
  const all = logits.data as Float32Array;
  const out = new Float32Array(batch * vocab);
  for (let b = 0; b < batch; b++) out.set(all.subarray((b * seq + seq - 1) * vocab, (b * seq + seq) * vocab), b * vocab);
  return out;
}

/** A prompt batch's shape checked against its ids and mask, and each row's count of real (unmasked) tokens. */
export interface PromptBatch {
  batch: number;
  seq: number;
  attentionMask: BigInt64Array;
  /** Unmasked tokens per row: where each row's generated tokens continue. */
  realTokens: number[];
}

/** Checks input_ids / attention_mask against [B, S] (a missing mask is all ones) and counts real tokens per row. */
export function promptBatch(inputIds: BigInt64Array, shape: readonly [number, number], attentionMask?: BigInt64Array): PromptBatch {
  const [B, S] = shape;
  if (inputIds.length !== B * S)
    throw new ModelError('BAD_INPUT', `input_ids has ${inputIds.length} values, shape [${B}, ${S}] needs ${B * S}`);
  const mask = attentionMask ?? new BigInt64Array(B * S).fill(1n);
  if (mask.length !== B * S)
    throw new ModelError('BAD_INPUT', `attention_mask must have the shape of input_ids [${B}, ${S}], got ${mask.length} values`);
  const realTokens = Array.from({ length: B }, (_, b) => mask.subarray(b * S, (b + 1) * S).reduce((a, v) => a + Number(v), 0));
  return { batch: B, seq: S, attentionMask: mask, realTokens };
}
