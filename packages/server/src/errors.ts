// OpenAI's error body, `{"error":{"message","type","param","code"}}`, as its clients parse it (openai-node's
// APIError reads `error.message`, `error.code`, `error.param`, `error.type`), and every error the server meets
// turned into one: fastify's schema errors (ajv's) with the field as a path (`messages[0].content`).
import type { FastifyError } from 'fastify';

export type ApiErrorType = 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'rate_limit_error' | 'server_error';

/** A request the server refuses or cannot answer: the HTTP status and the body OpenAI's clients read. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly type: ApiErrorType,
    readonly code: string,
    message: string,
    /** The request field at fault, as a path (`messages[0].content[1].image_url.url`); null when none. */
    readonly param: string | null = null,
    /** Response headers that go with it (Retry-After on a 429, WWW-Authenticate on a 401). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }

  body(): { error: { message: string; type: ApiErrorType; param: string | null; code: string } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** A 400 naming the field at fault. */
export function badRequest(param: string | null, code: string, message: string): ApiError {
  return new ApiError(400, 'invalid_request_error', code, message, param);
}

/** Any error as the OpenAI error it becomes: ours as they are, fastify's 4xx by status, the engine's by code. */
export function toApiError(error: unknown): ApiError {
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

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: { additionalProperty?: string; missingProperty?: string; allowedValues?: unknown[] };
}

/** `/messages/0/content` -> `messages[0].content`. */
function fieldPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, s) => (/^\d+$/.test(s) ? `${path}[${s}]` : path === '' ? s : `${path}.${s}`), '');
}

function validationError(error: FastifyError & { validation?: unknown[] }): ApiError {
  const v = (error.validation?.[0] ?? {}) as AjvError;
  const base = fieldPath(v.instancePath ?? '');
  const join = (name: string) => (base === '' ? name : `${base}.${name}`);
  if (v.keyword === 'additionalProperties' && v.params.additionalProperty !== undefined) {
    const field = join(v.params.additionalProperty);
    return new ApiError(400, 'invalid_request_error', 'unknown_parameter', `unrecognized request field: ${field}`, field);
  }
  if (v.keyword === 'required' && v.params.missingProperty !== undefined) {
    const field = join(v.params.missingProperty);
    return new ApiError(400, 'invalid_request_error', 'missing_required_parameter', `${field} is required`, field);
  }
  const field = base === '' ? null : base;
  const what = v.keyword === 'anyOf' ? 'has the wrong type or value' : (v.message ?? 'is invalid');
  return new ApiError(400, 'invalid_request_error', 'invalid_value', `${field ?? 'the body'} ${what}`, field);
}
