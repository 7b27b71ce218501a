// OpenAI's error body, `{"error":{"message","type","param","code"}}`, as its clients parse it (openai-node's
// APIError reads `error.message`, `error.code`, `error.param`, `error.type`).

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
