// The OpenAI-compatible HTTP server on one engine: routes, auth, admission (429 past the queue), each request's
// cancellation (client gone, deadline, stop string) and the graceful close SIGTERM asks for.
import { randomUUID } from 'node:crypto';
import type { ChatEngine } from '@vlmkit/models';
import { DEFAULT_MAX_PIXELS } from '@vlmkit/processors';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { bearerMatches } from './auth.js';
import { ApiError } from './errors.js';
import type { RemoteMediaLimits } from './media.js';
import { serverMetrics } from './metrics.js';
import { CHAT_COMPLETION_SCHEMA, type ChatCompletionBody, chatRequest, type EngineRequest, type RequestLimits } from './request.js';
import { StopMatcher } from './stop.js';
import { validationError } from './validation.js';

export interface ServerOptions {
  /** The engine that answers (createEngine(model)); a promise while the model loads: /health says 503 until then. */
  engine: ChatEngine | Promise<ChatEngine>;
  /** The model's name(s): what /v1/models lists and a request's `model` must be (the first is the answer's `model`). */
  model: string | readonly string[];
  /** Every route but /health then needs `Authorization: Bearer <apiKey>`. */
  apiKey?: string | undefined;
  /** Local media paths are read under this directory only; without it they are refused. */
  mediaDir?: string | undefined;
  /** Fetch http(s) media (never from a private, loopback or link-local address), within these limits. Default false. */
  allowRemoteMedia?: boolean | RemoteMediaLimits | undefined;
  /** Requests that may wait beyond the engine's batch; past them a request gets 429 with Retry-After. Default 64. */
  maxQueue?: number | undefined;
  /** Largest request body in bytes (a 413 past it). Default 32 MiB. */
  bodyLimit?: number | undefined;
  /** A request still running after this long is cancelled (504, or an error event when streaming). Default 10 min. */
  deadlineMs?: number | undefined;
  /** max_tokens when a request gives none. Default 128 (as `vlmkit run`). */
  defaultMaxTokens?: number | undefined;
  /** The largest max_tokens taken. Default 8192. */
  maxTokens?: number | undefined;
  /** Characters of text over a request's messages. Default 1 Mi. */
  maxPromptChars?: number | undefined;
  /** Images and videos in one request. Default 16. */
  maxMediaParts?: number | undefined;
  /** The largest image in pixels (checked from its header before decoding). Default the processors' DEFAULT_MAX_PIXELS. */
  maxImagePixels?: number | undefined;
  /** Largest media file read (data URL, media directory). Default 64 MiB. */
  maxMediaBytes?: number | undefined;
  /** Seconds a 429 or 503 asks the client to wait. Default 1. */
  retryAfterSeconds?: number | undefined;
  /** Where the server reports a request that failed on its side (a 500). Default stderr. */
  log?: ((line: string) => void) | undefined;
}

export interface VlmServer {
  /** The fastify instance (for `inject` in tests, or more routes). */
  readonly app: FastifyInstance;
  /** Listens (default 127.0.0.1, port 8000; port 0 picks a free one); returns the address, `http://host:port`. */
  listen(options?: { host?: string | undefined; port?: number | undefined }): Promise<string>;
  /**
   * Stops taking requests (503), lets the running ones finish for up to `graceMs` (default 30 s), cancels the
   * rest, closes the listener and the engine.
   */
  close(options?: { graceMs?: number | undefined }): Promise<void>;
}

interface Running {
  cancel: AbortController;
  done: Promise<void>;
}

/** An OpenAI-compatible server on `engine`: POST /v1/chat/completions, GET /v1/models, /health, /metrics. */
export function createServer(options: ServerOptions): VlmServer {
  const names = typeof options.model === 'string' ? [options.model] : [...options.model];
  if (names.length === 0 || names.some((n) => n === ''))
    throw new TypeError('createServer: options.model needs at least one non-empty name');
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const maxQueue = options.maxQueue ?? 64;
  const deadlineMs = options.deadlineMs ?? 600_000;
  const retryAfter = String(options.retryAfterSeconds ?? 1);
  const remote = options.allowRemoteMedia;
  const limits: RequestLimits = {
    mediaDir: options.mediaDir,
    remote: remote ? { maxBytes: 20 * 2 ** 20, timeoutMs: 10_000, ...(remote === true ? {} : remote) } : undefined,
    maxFileBytes: options.maxMediaBytes ?? 64 * 2 ** 20,
    defaultMaxTokens: options.defaultMaxTokens ?? 128,
    maxTokensLimit: options.maxTokens ?? 8192,
    maxPromptChars: options.maxPromptChars ?? 2 ** 20,
    maxMediaParts: options.maxMediaParts ?? 16,
    maxImagePixels: options.maxImagePixels ?? DEFAULT_MAX_PIXELS,
  };
  const created = Math.floor(Date.now() / 1000);

  let engine: ChatEngine | undefined;
  let loadFailed = false;
  let closing = false;
  Promise.resolve(options.engine).then(
    (e) => {
      engine = e;
    },
    (e: unknown) => {
      loadFailed = true;
      log(`vlmkit serve: the model failed to load: ${(e as Error).message}`);
    },
  );
  const running = new Set<Running>();
  // Admitted requests still reading their media, before the engine has them.
  let preparing = 0;
  const metrics = serverMetrics(
    () => engine?.stats(),
    () => preparing,
  );

  const app = Fastify({
    bodyLimit: options.bodyLimit ?? 32 * 2 ** 20,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Wrong types are refused, never coerced ("1" is not 1), and nothing is dropped or defaulted silently.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });

  // Bodies are JSON only: fastify's text/plain parser would hand a string to the schema.
  app.removeContentTypeParser('text/plain');

  const unavailable = (why: string) => new ApiError(503, 'server_error', 'unavailable', why, null, { 'retry-after': retryAfter });

  app.addHook('onRequest', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    reply.raw.once('close', () => metrics.requests.inc({ route, status: String(reply.raw.statusCode) }));
    if (options.apiKey !== undefined && route !== '/health' && !bearerMatches(req.headers.authorization, options.apiKey)) {
      throw new ApiError(
        401,
        'authentication_error',
        'invalid_api_key',
        'a valid API key is required: send Authorization: Bearer <key>',
        null,
        {
          'www-authenticate': 'Bearer',
        },
      );
    }
  });

  app.setErrorHandler((error: FastifyError | ApiError, req: FastifyRequest, reply: FastifyReply) => {
    const e = toApiError(error);
    if (e.status >= 500 && e.code === 'internal_error') log(`vlmkit serve: ${req.method} ${req.url}: ${(error as Error).stack ?? error}`);
    void reply.code(e.status).headers(e.headers).send(e.body());
  });
  app.setNotFoundHandler((req, reply) => {
    const e = new ApiError(404, 'not_found_error', 'not_found', `no route ${req.method} ${req.url.slice(0, 200)}`);
    void reply.code(404).send(e.body());
  });

  app.get('/health', async (_req, reply) => {
    const status = closing ? 'closing' : loadFailed ? 'failed' : engine === undefined ? 'loading' : 'ok';
    return reply.code(status === 'ok' ? 200 : 503).send({ status });
  });

  app.get('/metrics', async (_req, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  const modelEntry = (id: string) => ({ id, object: 'model', created, owned_by: 'vlmkit' });
  app.get('/v1/models', async () => ({ object: 'list', data: names.map(modelEntry) }));
  app.get<{ Params: { id: string } }>('/v1/models/:id', async (req) => {
    if (!names.includes(req.params.id)) throw unknownModel(req.params.id, 'id');
    return modelEntry(req.params.id);
  });

  app.post<{ Body: ChatCompletionBody }>('/v1/chat/completions', { schema: { body: CHAT_COMPLETION_SCHEMA } }, async (req, reply) => {
    if (closing) throw unavailable('the server is shutting down');
    if (engine === undefined)
      throw unavailable(loadFailed ? 'the model failed to load' : 'the model is still loading: GET /health says 200 once it is ready');
    if (!names.includes(req.body.model)) throw unknownModel(req.body.model, 'model');
    if (running.size >= engine.stats().maxBatch + maxQueue) {
      throw new ApiError(
        429,
        'rate_limit_error',
        'queue_full',
        `the server holds ${running.size} requests, its limit: try again shortly`,
        null,
        {
          'retry-after': retryAfter,
        },
      );
    }
    const cancel = new AbortController();
    const { promise: done, resolve: finished } = withResolvers();
    const entry: Running = { cancel, done };
    running.add(entry);
    // A client that leaves (the response closed before it ended) cancels its request in the engine.
    const onClose = () => {
      if (!reply.raw.writableFinished) cancel.abort(CLIENT_GONE);
    };
    reply.raw.once('close', onClose);
    const deadline = setTimeout(() => cancel.abort(DEADLINE), deadlineMs);
    const start = performance.now();
    let request: EngineRequest | undefined;
    try {
      preparing++;
      try {
        request = await chatRequest(req.body, limits);
      } finally {
        preparing--;
      }
      const answer = new Answer(engine, request, cancel.signal, start, metrics);
      const id = `chatcmpl-${randomUUID().replaceAll('-', '')}`;
      const head = { id, created: Math.floor(Date.now() / 1000), model: names[0]! };
      if (request.stream) return await streamAnswer(answer, head, request.includeUsage, reply, cancel.signal, deadlineMs);
      const r = await answer.whole();
      if (cancel.signal.reason === DEADLINE) throw deadlineError(deadlineMs);
      if (cancel.signal.reason === SHUTDOWN) throw shutdownError();
      return {
        ...head,
        object: 'chat.completion',
        choices: [
          { index: 0, message: { role: 'assistant', content: r.text, refusal: null }, logprobs: null, finish_reason: r.finishReason },
        ],
        usage: r.usage,
      };
    } finally {
      clearTimeout(deadline);
      reply.raw.off('close', onClose);
      await request?.dispose();
      running.delete(entry);
      finished();
    }
  });

  return {
    app,
    async listen(o = {}) {
      return app.listen({ host: o.host ?? '127.0.0.1', port: o.port ?? 8000 });
    },
    async close(o = {}) {
      closing = true;
      const idle = () => Promise.all([...running].map((r) => r.done));
      const grace = withResolvers();
      const timer = setTimeout(grace.resolve, o.graceMs ?? 30_000);
      await Promise.race([idle(), grace.promise]);
      clearTimeout(timer);
      for (const r of running) r.cancel.abort(SHUTDOWN);
      await idle();
      await app.close();
      await (engine ?? (await Promise.resolve(options.engine).catch(() => undefined)))?.close({ abort: true });
    },
  };
}

/** Promise.withResolvers (Node 22) for Node 20. */
function withResolvers(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const CLIENT_GONE = 'client disconnected';
const DEADLINE = 'deadline';
const SHUTDOWN = 'shutdown';

function deadlineError(ms: number): ApiError {
  return new ApiError(504, 'server_error', 'deadline_exceeded', `the request ran past the server's deadline of ${ms} ms and was cancelled`);
}

function shutdownError(): ApiError {
  return new ApiError(503, 'server_error', 'shutdown', 'the server shut down before the answer ended: send the request again');
}

function unknownModel(name: string, param: string): ApiError {
  return new ApiError(
    404,
    'not_found_error',
    'model_not_found',
    `the model '${name.slice(0, 100)}' is not served here (GET /v1/models lists the names)`,
    param,
  );
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** One request's run in the engine: its pieces cut at the stop strings, its usage and metrics once it ends. */
class Answer {
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
    readonly metrics: ReturnType<typeof serverMetrics>,
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
async function streamAnswer(
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

/** Any error as the OpenAI error it becomes: ours as they are, fastify's 4xx by status, the engine's by code. */
function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const e = error as FastifyError & { validation?: unknown[] };
  if (Array.isArray(e.validation)) return validationError(e);
  const code = typeof e.code === 'string' ? e.code : '';
  if (e.statusCode === 413)
    return new ApiError(413, 'invalid_request_error', 'body_too_large', `the request body is over the server's limit: ${e.message}`);
  if (e.statusCode === 415)
    return new ApiError(415, 'invalid_request_error', 'unsupported_media_type', `send the body as application/json: ${e.message}`);
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new ApiError(
      e.statusCode,
      'invalid_request_error',
      code.startsWith('FST_ERR_CTP') ? 'invalid_json' : 'invalid_request',
      e.message,
    );
  }
  if (
    e.name === 'ProcessorError' ||
    code === 'PROMPT_TOO_LONG' ||
    code === 'PLACEHOLDER_MISMATCH' ||
    code === 'BAD_INPUT' ||
    code === 'BAD_GENERATION_OPTIONS'
  ) {
    return new ApiError(400, 'invalid_request_error', code.toLowerCase(), e.message, 'messages');
  }
  if (code === 'ENGINE_CLOSED')
    return new ApiError(503, 'server_error', 'unavailable', 'the server is shutting down', null, { 'retry-after': '1' });
  return new ApiError(500, 'server_error', 'internal_error', 'the server failed to answer this request (see its log)');
}
