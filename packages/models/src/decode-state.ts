import { type HostTensor, int64 } from '@vlmkit/runtime';

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
