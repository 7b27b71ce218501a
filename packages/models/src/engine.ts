// One model shared by many callers: `createEngine(model).chat(...)` takes concurrent conversations and decodes
// them together (vLLM's LLMEngine, without HTTP). Each call keeps chat()'s contract: its own stream, sampler,
// eos and abort signal; a bad request fails alone.
import type { ChatMessage } from '@vlmkit/processors';
import { type ChatModel, type ChatOptions, type ChatStream, type ChatSummary, chat } from './chat.js';
import { ModelError } from './errors.js';
import type { GenerateResult } from './generate.js';
import type { ModelGenerateOptions } from './graph-loop.js';
import type { NamedTensors, PretrainedModel } from './pretrained-model.js';

export interface EngineOptions {
  /** The most requests decoding together; more wait in a FIFO queue. Default: from `kvMemoryBytes`, at most 16. */
  maxBatch?: number | undefined;
  /** Bytes the engine's KV cache may hold, all rows together. Default: half of the memory available at `createEngine`. */
  kvMemoryBytes?: number | undefined;
}

export interface EngineStats {
  /** Requests decoding now (their vision and prefill done). */
  running: number;
  /** Requests waiting for a row (FIFO). */
  queued: number;
  maxBatch: number;
  /** Bytes the KV cache holds now. */
  kvBytes: number;
  kvLimitBytes: number;
  /** New tokens made since the engine was created, all requests together. */
  tokensGenerated: number;
}

export interface ChatEngine {
  /**
   * Same contract as chat(model, processor, messages, options): a ChatStream; concurrent calls decode together.
   * Every error of the request (bad input, a prompt past max_position_embeddings, a KV cache larger than the
   * engine's limit, ENGINE_CLOSED) rejects its stream only; `options.signal` ends it with finishReason 'aborted'.
   */
  chat(messages: readonly ChatMessage[], options: ChatOptions): ChatStream;
  stats(): EngineStats;
  /**
   * Stop accepting (new chat() calls reject with a ModelError 'ENGINE_CLOSED'); wait for the running and queued
   * requests to finish, or abort them when `abort` is true (their streams end with finishReason 'aborted').
   */
  close(options?: { abort?: boolean }): Promise<void>;
}

/** A batching engine over a loaded model (its processor makes each request's inputs). */
export async function createEngine(model: PretrainedModel, options: EngineOptions = {}): Promise<ChatEngine> {
  const maxBatch = options.maxBatch ?? 16;
  if (!Number.isSafeInteger(maxBatch) || maxBatch < 1)
    throw new ModelError('BAD_GENERATION_OPTIONS', `maxBatch must be an integer >= 1, got ${String(options.maxBatch)}`);
  const kvLimitBytes = options.kvMemoryBytes ?? 2 ** 30;
  const queue: (() => void)[] = [];
  const all = new Set<AbortController>();
  let [running, tokensGenerated, closed, aborting] = [0, 0, false, false];
  let idle: (() => void) | undefined;

  // Sequential for now: one request's generate at a time, the rest in FIFO order.
  const generate = async (inputs: NamedTensors, o: ModelGenerateOptions): Promise<GenerateResult & { visionMs: number }> => {
    if (running > 0) await new Promise<void>((resolve) => queue.push(resolve));
    running++;
    const stop = new AbortController();
    all.add(stop);
    const abort = () => stop.abort();
    o.signal?.addEventListener('abort', abort, { once: true });
    if (o.signal?.aborted || aborting) stop.abort();
    try {
      return await model.generate(inputs, {
        ...o,
        signal: stop.signal,
        onToken: (t, n) => {
          tokensGenerated++;
          return o.onToken?.(t, n);
        },
      });
    } finally {
      o.signal?.removeEventListener('abort', abort);
      all.delete(stop);
      running--;
      const next = queue.shift();
      if (next) next();
      else if (running === 0) idle?.();
    }
  };
  const chatModel: ChatModel = { device: model.device, generate, eos: async () => model.eos };
  return {
    chat(messages, o) {
      if (closed) return failedStream(new ModelError('ENGINE_CLOSED', 'the engine is closed: it takes no new requests (create another)'));
      return chat(chatModel, model.processor(), messages, o);
    },
    stats: () => ({ running, queued: queue.length, maxBatch, kvBytes: 0, kvLimitBytes, tokensGenerated }),
    async close(c = {}) {
      closed = true;
      aborting ||= c.abort === true;
      if (aborting) for (const s of all) s.abort();
      if (running > 0 || queue.length > 0) await new Promise<void>((resolve) => (idle = resolve));
    },
  };
}

/** A stream that rejects with `error` when read (and its summary with it). */
function failedStream(error: Error): ChatStream {
  return {
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(error) }),
    summary: (): Promise<ChatSummary> => Promise.reject(error),
  };
}
