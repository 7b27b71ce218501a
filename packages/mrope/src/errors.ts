/** What went wrong, as a stable code callers can branch on. */
export type MropeErrorCode =
  /** A run of image/video placeholder tokens does not match its grid_thw. */
  | 'PLACEHOLDER_COUNT_MISMATCH'
  /** More or fewer images/videos in the tokens than grids given. */
  | 'GRID_COUNT_MISMATCH'
  /** A grid_thw that is not divisible by the merge sizes, or not positive. */
  | 'INVALID_GRID'
  /** Inputs of inconsistent shapes (ids vs mask, position ids vs stated shape). */
  | 'SHAPE_MISMATCH'
  /** Image and video share a patch id and no start token tells them apart. */
  | 'AMBIGUOUS_PATCH_TOKEN'
  /** A rotary configuration that cannot be laid out (odd dims, sections that do not add up). */
  | 'INVALID_ROTARY_CONFIG';

/** Thrown by every @vlmkit/mrope function on bad input; `code` is stable, `message` says what to fix. */
export class MropeError extends Error {
  override readonly name = 'MropeError';
  constructor(
    readonly code: MropeErrorCode,
    message: string,
  ) {
    super(message);
  }
}
