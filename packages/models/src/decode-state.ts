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
