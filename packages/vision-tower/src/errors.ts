/** What went wrong, as a stable code callers can branch on. */
export type VisionTowerErrorCode =
  /** config.json (or its vision_config) lacks a field, or a field has the wrong type or range. */
  | 'INVALID_CONFIG'
  /** Two config fields disagree (hidden_size vs embed_dim, heads that do not divide the width). */
  | 'INCONSISTENT_CONFIG'
  /** An activation (hidden_act) the tower does not implement. */
  | 'UNSUPPORTED_ACTIVATION'
  /** A grid_thw that is not positive or not divisible by the spatial merge size. */
  | 'INVALID_GRID'
  /** A builder input of the wrong dtype or shape. */
  | 'BAD_INPUT';

/** Thrown by @vlmkit/vision-tower on bad configs and inputs; `code` is stable, `message` says what to fix. */
export class VisionTowerError extends Error {
  override readonly name = 'VisionTowerError';
  constructor(
    readonly code: VisionTowerErrorCode,
    message: string,
  ) {
    super(message);
  }
}
