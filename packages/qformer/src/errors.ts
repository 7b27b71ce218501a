/** What went wrong, as a stable code callers can branch on. */
export type QFormerErrorCode =
  /** config.json is not an object, or lacks a field the component needs. */
  | 'MISSING_CONFIG_FIELD'
  /** A config field of the wrong type or out of range, or two fields that disagree. */
  | 'INVALID_CONFIG'
  /** A valid config the references themselves cannot run (a spatial projector with a downsample rate other than 1/2). */
  | 'UNSUPPORTED_CONFIG'
  /** Graph inputs of the wrong dtype, rank or size, or a bad build option. */
  | 'BAD_INPUT';

/** Thrown by every @vlmkit/qformer function on bad input; `code` is stable, `message` says what to fix. */
export class QFormerError extends Error {
  override readonly name = 'QFormerError';
  constructor(
    readonly code: QFormerErrorCode,
    message: string,
  ) {
    super(message);
  }
}
