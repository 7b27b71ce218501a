// Continuous batching (vLLM's scheduler, one model, host memory): requests wait in a FIFO queue; between decode
// steps the head of the queue runs its vision encoder and prompt alone (batch 1) and its KV cache joins the
// running rows; every decode step is one decoder run over all running rows, each at its own length, position
// and mask; a row that ends (eos, maxNewTokens, its signal) leaves after the step and its row is reused.
import { type HostTensor, int64 } from '@vlmkit/runtime';
import { KvSlots } from './batch-kv.js';
import type { BatchDecoder, BatchRequest } from './decoder-model.js';
import { ModelError } from './errors.js';
import { type GenerateOptions, type GenerateResult, validateGenerateOptions } from './generate.js';
import { sampleToken, seededRandom } from './sampling.js';

/** The fewest slots a row's cache grows by (then doubling up to what its requests can use). */
const MIN_SLOTS = 64;

export type BatchResult = GenerateResult & { visionMs: number };

/** One request from `generate` to its end: queued, then (after its prefill) a running row. */
interface Job {
  request: BatchRequest;
  o: GenerateOptions;
  /** New tokens it makes at most: maxNewTokens, or fewer where the model's context ends (`BatchRequest.maxNewTokens`). */
  limit: number;
  /** Slots its row can use: the prompt and every token fed back (all but the last sampled). */
  reserve: number;
  eos: Set<number>;
  random: () => number;
  tokens: number[];
  stepMs: number[];
  prefillMs: number;
  visionMs: number;
  /** Slots filled: the prompt, then one per token fed. */
  length: number;
  /** The position of the next token fed. */
  position: number;
  resolve(r: BatchResult): void;
  reject(e: unknown): void;
}

export interface SchedulerLimits {
  maxBatch: number;
  kvLimitBytes: number;
}

export class BatchScheduler {
  private readonly queue: Job[] = [];
  private readonly rows: Job[] = [];
  private readonly kv: KvSlots;
  private mask = new BigInt64Array(0);
  private pumping: Promise<void> | undefined;
  tokensGenerated = 0;

  constructor(
    private readonly decoder: BatchDecoder,
    readonly limits: SchedulerLimits,
  ) {
    this.kv = new KvSlots(decoder.dims, decoder.kvDtype, decoder.io);
  }

  get running(): number {
    return this.rows.length;
  }
  get queued(): number {
    return this.queue.length;
  }
  get kvBytes(): number {
    return this.kv.byteLength;
  }
  /** Bytes one position of one request takes in the KV cache. */
  get bytesPerToken(): number {
    return this.kv.bytesPerSlot;
  }

  /** generate()'s contract for one sequence (HF-named inputs, batch 1): the request decodes with the others. */
  generate(inputs: Record<string, HostTensor>, options: GenerateOptions): Promise<BatchResult> {
    return new Promise<BatchResult>((resolve, reject) => {
      const t = this.decoder.tokens;
      const o = { eos: t.eos, padTokenId: t.pad, ...options };
      validateGenerateOptions(o, this.decoder.dims.vocabSize);
      const request = this.decoder.request(inputs);
      // The model's context caps the request's tokens, so its row never holds more than max_position_embeddings.
      const limit = Math.min(o.maxNewTokens, request.maxNewTokens ?? o.maxNewTokens);
      const reserve = request.seq + Math.max(limit - 1, 0);
      const bytes = reserve * this.kv.bytesPerSlot;
      if (bytes > this.limits.kvLimitBytes)
        throw new ModelError(
          'INSUFFICIENT_MEMORY',
          `the request needs ${mib(bytes)} MiB of KV cache (${request.seq} prompt positions + ${limit} new tokens), more than the engine's limit of ${mib(this.limits.kvLimitBytes)} MiB: lower maxNewTokens, or raise kvMemoryBytes`,
        );
      const eos = new Set(o.eos === undefined ? [] : typeof o.eos === 'number' ? [o.eos] : o.eos);
      const job: Job = {
        ...{ request, o, limit, reserve, eos, random: seededRandom(o.seed ?? 0), tokens: [], stepMs: [], prefillMs: 0, visionMs: 0 },
        ...{ length: 0, position: request.position, resolve, reject },
      };
      if (limit === 0 || o.signal?.aborted) return this.finish(job);
      this.queue.push(job);
      this.pump();
    });
  }

  /** Resolves once no request is queued or running. */
  async idle(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  private pump(): void {
    this.pumping ??= this.loop().finally(() => {
      this.pumping = undefined;
    });
  }

  private async loop(): Promise<void> {
    for (;;) {
      try {
        await this.admit();
        if (this.rows.length === 0) {
          if (this.queue.length === 0) break;
          continue;
        }
        await this.step();
      } catch (e) {
        this.failRows(e);
      }
    }
    // Nothing runs: the cache's memory goes back until the next request.
    this.kv.resize(0, 0, []);
  }

  /** A failed step or cache resize leaves no row's cache trustworthy: every running request fails with it. */
  private failRows(e: unknown): void {
    for (const r of this.rows.splice(0)) r.reject(e);
  }

  private stopped(job: Job): boolean {
    return job.o.signal?.aborted === true;
  }

  /** Joins queued requests while a row is free and their KV cache fits beside the running rows'. */
  private async admit(): Promise<void> {
    for (;;) {
      // Aborted requests leave first (between two prefills too): their rows and memory go to the queue.
      for (const job of this.queue.filter((j) => this.stopped(j))) {
        this.queue.splice(this.queue.indexOf(job), 1);
        this.finish(job);
      }
      this.leave(this.rows.flatMap((r, b) => (this.stopped(r) ? [b] : [])));
      if (this.queue.length === 0 || this.rows.length >= this.limits.maxBatch) return;
      const job = this.queue[0]!;
      const slots = Math.max(job.reserve, ...this.rows.map((r) => r.reserve));
      const bytes = (this.rows.length + 1) * slots * this.kv.bytesPerSlot;
      if (bytes > this.limits.kvLimitBytes && this.rows.length > 0) return;
      this.queue.shift();
      try {
        await this.prefill(job);
      } catch (e) {
        job.reject(e);
      }
    }
  }

  /** The request's vision encoder and prompt alone; its first token; its KV cache into the next free row. */
  private async prefill(job: Job): Promise<void> {
    const t0 = performance.now();
    const pre = await job.request.prefill();
    job.visionMs = pre.visionMs;
    job.prefillMs = performance.now() - t0 - pre.visionMs;
    const row = this.rows.length;
    try {
      this.fit(row + 1, job.request.seq, job.reserve);
    } catch (e) {
      // The cache was left empty (KvSlots.resize): the running rows lost theirs too.
      this.failRows(e);
      throw e;
    }
    this.kv.write(pre.outputs, 0, row, 0, job.request.seq);
    job.length = job.request.seq;
    if (this.emit(job, pre.logits, 0)) this.rows.push(job);
    else this.finish(job);
  }

  /** One decoder run over every running row; each row's new KV slot written, its token sampled. */
  private async step(): Promise<void> {
    const rows = this.rows;
    const B = rows.length;
    this.fit(B, 0, 0);
    const C = this.kv.capacity;
    const W = C + 1;
    if (this.mask.length !== B * W) this.mask = new BigInt64Array(B * W);
    rows.forEach((r, b) => {
      const m = r.request.mask;
      this.mask.set(m, b * W);
      this.mask.fill(1n, b * W + m.length, b * W + r.length);
      this.mask.fill(0n, b * W + r.length, b * W + C);
      this.mask[b * W + C] = 1n;
    });
    const t0 = performance.now();
    const out = await this.decoder.step({
      tokens: rows.map((r) => r.tokens[r.tokens.length - 1]!),
      attentionMask: int64(this.mask, [B, W]),
      positions: rows.map((r) => r.position),
      past: this.kv.past(B),
    });
    const ms = performance.now() - t0;
    const V = this.decoder.dims.vocabSize;
    const leaving: number[] = [];
    rows.forEach((r, b) => {
      this.kv.write(out.outputs, b, b, r.length, 1);
      r.length++;
      r.position++;
      r.stepMs.push(ms);
      if (!this.emit(r, out.logits.subarray(b * V, (b + 1) * V), r.tokens.length)) leaving.push(b);
    });
    this.leave(leaving);
  }

  /** Ends the rows at `indices` (ascending); from the last, each one's place is taken by the last running row. */
  private leave(indices: readonly number[]): void {
    const rows = this.rows;
    for (const b of [...indices].reverse()) {
      const last = rows.length - 1;
      const job = rows[b]!;
      if (b !== last) {
        this.kv.move(last, b, rows[last]!.length);
        rows[b] = rows[last]!;
      }
      rows.pop();
      this.finish(job);
    }
    if (indices.length > 0 && rows.length > 0) this.fit(rows.length, 0, 0);
  }

  /**
   * Samples the request's token `n` from its logits [V] and hands it on; false when the request ends here (eos,
   * its limit, its signal, or a throwing onToken).
   */
  private emit(job: Job, logits: Float32Array, n: number): boolean {
    if (this.stopped(job)) return false;
    const { o } = job;
    try {
      o.onLogits?.(logits, n);
      const t = sampleToken(logits, o, job.random);
      job.tokens.push(t);
      this.tokensGenerated++;
      // The consumer's backpressure is not waited for: one slow reader must not hold the batch back.
      const ack = o.onToken?.([t], n);
      if (ack instanceof Promise) ack.catch(() => undefined);
      return !(job.eos.has(t) || job.tokens.length >= job.limit || this.stopped(job));
    } catch (e) {
      job.reject(e);
      job.reject = () => undefined;
      return false;
    }
  }

  private finish(job: Job): void {
    const capped = job.limit < job.o.maxNewTokens ? { maxNewTokens: job.limit } : {};
    job.resolve({ tokens: [job.tokens], timings: { prefillMs: job.prefillMs, stepMs: job.stepMs }, visionMs: job.visionMs, ...capped });
  }

  /**
   * Buffers for `rows` rows with room for every running row's next slot (and `slots` for a joining one), grown by
   * doubling (rows up to maxBatch, slots up to what the requests can use, a joining one's `reserve` included)
   * within the KV limit, and cut back when far longer than needed: attention reads every slot.
   */
  private fit(rows: number, slots: number, reserve: number): void {
    const kv = this.kv;
    const need = Math.max(slots, ...this.rows.map((r) => r.length + 1));
    const most = Math.max(need, reserve, ...this.rows.map((r) => r.reserve));
    let R = kv.rows >= rows ? kv.rows : Math.min(this.limits.maxBatch, Math.max(rows, 2 * kv.rows));
    let C = kv.capacity >= need ? kv.capacity : Math.min(most, Math.max(need, 2 * kv.capacity, MIN_SLOTS));
    if (C > most || C > 2 * Math.max(need, MIN_SLOTS)) C = Math.min(most, Math.max(need, MIN_SLOTS));
    if (R * C * kv.bytesPerSlot > this.limits.kvLimitBytes) R = rows;
    if (R === kv.rows && C === kv.capacity) return;
    kv.resize(
      R,
      C,
      this.rows.map((r) => r.length),
    );
  }
}

function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(1);
}
