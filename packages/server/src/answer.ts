// One request's run in the engine, and how its answer goes out: one JSON body, or OpenAI's server-sent chunks.
// The stop strings cut the text here; why a request was cancelled (client gone, deadline, shutdown) decides
// how its answer ends.
import type { ChatEngine } from '@vlmkit/models';
import type { FastifyReply } from 'fastify';
import { ApiError, toApiError } from './errors.js';
import type { ServerMetrics } from './metrics.js';
import type { EngineRequest } from './request.js';
import { StopMatcher } from './stop.js';

/** Why a request's AbortSignal fired (its `reason`). */
export const CLIENT_GONE = 'client disconnected';
export const DEADLINE = 'deadline';
export const SHUTDOWN = 'shutdown';

export function deadlineError(ms: number): ApiError {
  return new ApiError(504, 'server_error', 'deadline_exceeded', `the request ran past the server's deadline of ${ms} ms and was cancelled`);
}

export function shutdownError(): ApiError {
  return new ApiError(503, 'server_error', 'shutdown', 'the server shut down before the answer ended: send the request again');
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** One request's run in the engine: its pieces cut at the stop strings, its usage and metrics once it ends. */
export class Answer {
  readonly #stream: AsyncIterator<string>;
  readonly #summary: () => Promise<{ promptTokens: number; newTokens: number; finishReason: string }>;
  readonly #matcher: StopMatcher;
  readonly #stopped = new AbortController();
  #first: number | undefined;

  constructor(
    engine: ChatEngine,
    request: EngineRequest,
    signal: AbortSignal,
    readonly start: number,
    readonly metrics: ServerMetrics,
  ) {
    const stream = engine.chat(request.messages, { ...request.options, signal: AbortSignal.any([signal, this.#stopped.signal]) });
    this.#stream = stream[Symbol.asyncIterator]();
    this.#summary = () => stream.summary();
    this.#matcher = new StopMatcher(request.stop);
  }

  /** The next text to send ('' when a piece is held back), or undefined once the engine's stream has ended. */
  async next(): Promise<string | undefined> {
    const r = await this.#stream.next();
    if (r.done) return undefined;
    this.#first ??= performance.now();
    const text = this.#matcher.push(r.value);
    // The stop string has been seen: the engine stops this request after its current step.
    if (this.#matcher.stopped) this.#stopped.abort();
    return text;
  }

  /** After the stream: the text held back, why the answer ended, the usage; the metrics are recorded. */
  async end(): Promise<{ rest: string; finishReason: 'stop' | 'length'; usage: Usage }> {
    const rest = this.#matcher.flush();
    const s = await this.#summary();
    const end = performance.now();
    this.metrics.tokensGenerated.inc(s.newTokens);
    if (this.#first !== undefined) {
      this.metrics.timeToFirstToken.observe((this.#first - this.start) / 1000);
      if (s.newTokens > 1) this.metrics.timePerOutputToken.observe((end - this.#first) / 1000 / (s.newTokens - 1));
    }
    return {
      rest,
      finishReason: s.finishReason === 'length' && !this.#matcher.stopped ? 'length' : 'stop',
      usage: { prompt_tokens: s.promptTokens, completion_tokens: s.newTokens, total_tokens: s.promptTokens + s.newTokens },
    };
  }

  async whole(): Promise<{ text: string; finishReason: 'stop' | 'length'; usage: Usage }> {
    let text = '';
    for (let piece = await this.next(); piece !== undefined; piece = await this.next()) text += piece;
    const r = await this.end();
    return { text: text + r.rest, finishReason: r.finishReason, usage: r.usage };
  }

  /** Ends the engine's stream early (an error after the headers were sent). */
  async cancel(): Promise<void> {
    this.#stopped.abort();
    await this.#stream.return?.();
  }
}

/**
 * Server-sent events in OpenAI's chunk format. The first piece is awaited before the headers, so a request the
 * engine refuses (a video FFmpeg cannot read, a prompt past the model's context) still gets its 4xx.
 */
export async function streamAnswer(
  answer: Answer,
  head: { id: string; created: number; model: string },
  includeUsage: boolean,
  reply: FastifyReply,
  cancelled: AbortSignal,
  deadlineMs: number,
): Promise<FastifyReply> {
  let piece: string | undefined;
  try {
    piece = await answer.next();
  } catch (e) {
    await answer.cancel().catch(() => undefined);
    throw e;
  }
  const res = reply.raw;
  reply.hijack();
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const send = (data: unknown) => {
    if (!res.destroyed) res.write(`data: ${JSON.stringify(data)}\n\n`);
  };
  const usage = includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    send({ ...head, object: 'chat.completion.chunk', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...usage });
  chunk({ role: 'assistant', content: '' });
  try {
    for (; piece !== undefined; piece = await answer.next()) if (piece !== '') chunk({ content: piece });
    const r = await answer.end();
    if (r.rest !== '') chunk({ content: r.rest });
    if (cancelled.reason === DEADLINE) throw deadlineError(deadlineMs);
    if (cancelled.reason === SHUTDOWN) throw shutdownError();
    chunk({}, r.finishReason);
    if (includeUsage) send({ ...head, object: 'chat.completion.chunk', choices: [], usage: r.usage });
  } catch (e) {
    // The headers are gone: the error travels as an event, as OpenAI's streaming API sends it.
    send(toApiError(e).body());
  }
  if (!res.destroyed) res.end('data: [DONE]\n\n');
  return reply;
}
