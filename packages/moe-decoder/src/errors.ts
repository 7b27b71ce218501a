/** What went wrong, as a stable code callers can branch on. */
export type MoeDecoderErrorCode =
  /** A config field is missing, of the wrong type, or out of range. */
  | 'INVALID_CONFIG'
  /** A valid reference config this package does not build (yet), e.g. biased projections. */
  | 'UNSUPPORTED_CONFIG'
  /** Builder inputs that do not fit the config (wrong rank, missing value, wrong count). */
  | 'BAD_INPUT';

/** Thrown by @vlmkit/moe-decoder on bad configs and inputs; `code` is stable, `message` says what to fix. */
export class MoeDecoderError extends Error {
  override readonly name = 'MoeDecoderError';
  constructor(
    readonly code: MoeDecoderErrorCode,
    message: string,
  ) {
    super(message);
  }
}
