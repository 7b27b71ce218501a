/** What went wrong, as a stable code callers can branch on. */
export type ResamplerErrorCode =
  /** config.json is not an object, or lacks a field the resampler needs. */
  | 'MISSING_CONFIG_FIELD'
  /** A config field of the wrong type or out of range, or two fields that disagree. */
  | 'INVALID_CONFIG'
  /** A valid config the references themselves do not support (temporal merge other than 2). */
  | 'UNSUPPORTED_CONFIG'
  /** A grid_thw that is not positive, not divisible by the merge size, or an odd frame count. */
  | 'INVALID_GRID'
  /** Graph inputs of the wrong dtype or shape, or index inputs missing. */
  | 'BAD_INPUT';

/** Thrown by every @vlmkit/resampler function on bad input; `code` is stable, `message` says what to fix. */
export class ResamplerError extends Error {
  override readonly name = 'ResamplerError';
  constructor(
    readonly code: ResamplerErrorCode,
    message: string,
  ) {
    super(message);
  }
}
