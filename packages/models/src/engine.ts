// One model shared by many callers: `createEngine(model).chat(...)` takes concurrent conversations and decodes
// them together (vLLM's LLMEngine, without HTTP). Each call keeps chat()'s contract: its own stream, sampler,
// eos and abort signal; a bad request fails alone.

import type { ChatMessage } from '@vlmkit/processors';
import { memAvailable } from '#platform';
import { KvSlots } from './batch-kv.js';
import { BatchScheduler } from './batch-scheduler.js';
import { type ChatModel, type ChatOptions, type ChatStream, type ChatSummary, chat } from './chat.js';
import { DecoderModel } from './decoder-model.js';
import { ModelError } from './errors.js';
import type { GenerateOptions, GenerateResult } from './generate.js';
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
   * Generation stops at max_position_embeddings (prompt + new tokens fed back) with finishReason 'length'.
   */
  chat(messages: readonly ChatMessage[], options: ChatOptions): ChatStream;
  /**
   * model.generate's contract for HF-named inputs of one sequence (made by your own processor), decoded with the
   * other requests; the same errors (ENGINE_CLOSED after close) as a rejection. Where max_position_embeddings
   * stops it before maxNewTokens, the result's `maxNewTokens` says how many it could make.
   */
  generate(inputs: NamedTensors, options: GenerateOptions): Promise<GenerateResult & { visionMs: number }>;
  stats(): EngineStats;
  /**
   * Stop accepting (new chat() calls reject with a ModelError 'ENGINE_CLOSED'); wait for the running and queued
   * requests to finish, or abort them when `abort` is true (their streams end with finishReason 'aborted').
   */
  close(options?: { abort?: boolean }): Promise<void>;
}

/** The most rows a default engine decodes together (more waste memory for little: each step's run grows with them). */
const DEFAULT_MAX_BATCH = 16;
/** The row length a default maxBatch is sized for: that many positions per request fit in the KV limit. */
const DEFAULT_ROW_POSITIONS = 4096;

/**
 * A batching engine over a loaded model (its processor makes each request's inputs). The model must use the host
 * decode loop (its default); its decoder session then serves only the engine.
 *
 * ```ts
 * const engine = await createEngine(model, { maxBatch: 8 });
 * const answers = await Promise.all(questions.map((q) => engine.chat(q, { maxNewTokens: 64 }).summary()));
 * await engine.close();
 * ```
 */
export async function createEngine(model: PretrainedModel, options: EngineOptions = {}): Promise<ChatEngine> {
  if (!(model instanceof DecoderModel))
    throw new ModelError('BAD_INPUT', 'createEngine takes a model loaded by vlmkit (loadPretrained, or a family class fromPretrained)');
  const decoder = model.batchDecoder();
  const { maxBatch: askedBatch, kvMemoryBytes } = options;
  if (askedBatch !== undefined && !(Number.isSafeInteger(askedBatch) && askedBatch >= 1))
    throw new ModelError('BAD_GENERATION_OPTIONS', `maxBatch must be an integer >= 1, got ${String(askedBatch)}`);
  if (kvMemoryBytes !== undefined && !(Number.isSafeInteger(kvMemoryBytes) && kvMemoryBytes >= 1))
    throw new ModelError('BAD_GENERATION_OPTIONS', `kvMemoryBytes must be an integer >= 1 (bytes), got ${String(kvMemoryBytes)}`);
  const kvLimitBytes = kvMemoryBytes ?? Math.floor(((await memAvailable()) ?? 4 * 2 ** 30) / 2);
  const perRow = DEFAULT_ROW_POSITIONS * new KvSlots(decoder.dims, decoder.kvDtype, decoder.io).bytesPerSlot;
  const maxBatch = askedBatch ?? Math.max(1, Math.min(DEFAULT_MAX_BATCH, Math.floor(kvLimitBytes / perRow)));
  const scheduler = new BatchScheduler(decoder, { maxBatch, kvLimitBytes });
  let closed = false;
  // close({ abort: true }) aborts every request's signal: chat() then ends each stream with finishReason 'aborted'.
  const closing = new AbortController();
  const withClosing = (signal: AbortSignal | undefined) => (signal ? AbortSignal.any([signal, closing.signal]) : closing.signal);
  const chatModel: ChatModel = { device: model.device, generate: (inputs, o) => scheduler.generate(inputs, o), eos: async () => model.eos };
  return {
    chat(messages, o) {
      if (closed) return failedStream(closedError());
      return chat(chatModel, model.processor(), messages, { ...o, signal: withClosing(o.signal) });
    },
    generate(inputs, o) {
      if (closed) return Promise.reject(closedError());
      return scheduler.generate(inputs, { ...o, signal: withClosing(o.signal) });
    },
    stats: () => ({
      running: scheduler.running,
      queued: scheduler.queued,
      maxBatch,
      kvBytes: scheduler.kvBytes,
      kvLimitBytes,
      tokensGenerated: scheduler.tokensGenerated,
    }),
    async close(c = {}) {
      closed = true;
      if (c.abort) closing.abort();
      await scheduler.idle();
    },
  };
}

function closedError(): ModelError {
  return new ModelError('ENGINE_CLOSED', 'the engine is closed: it takes no new requests (create another)');
}

/** A stream that rejects with `error` when read (and its summary with it). */
function failedStream(error: Error): ChatStream {
  return {
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(error) }),
    summary: (): Promise<ChatSummary> => Promise.reject(error),
  };
}
