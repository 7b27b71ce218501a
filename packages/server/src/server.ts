// The OpenAI-compatible HTTP server on one engine: routes, auth, admission (429 past the queue), each request's
// cancellation (client gone, deadline, stop string) and the graceful close SIGTERM asks for.
import { randomUUID } from 'node:crypto';
import type { ChatEngine } from '@vlmkit/models';
import { DEFAULT_MAX_PIXELS } from '@vlmkit/processors';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Answer, CLIENT_GONE, DEADLINE, deadlineError, SHUTDOWN, shutdownError, streamAnswer } from './answer.js';
import { bearerMatches } from './auth.js';
import { ApiError, toApiError } from './errors.js';
import type { RemoteMediaLimits } from './media.js';
import { serverMetrics } from './metrics.js';
import { CHAT_COMPLETION_SCHEMA, type ChatCompletionBody, chatRequest, type EngineRequest, type RequestLimits } from './request.js';

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

function unknownModel(name: string, param: string): ApiError {
  return new ApiError(
    404,
    'not_found_error',
    'model_not_found',
    `the model '${name.slice(0, 100)}' is not served here (GET /v1/models lists the names)`,
    param,
  );
}
