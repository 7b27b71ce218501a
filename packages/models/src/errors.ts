export type ModelErrorCode =
  | 'UNSUPPORTED_MODEL_TYPE'
  | 'CONFIG_NOT_FOUND'
  | 'BAD_CONFIG'
  | 'BAD_INPUT'
  | 'PLACEHOLDER_MISMATCH'
  | 'BAD_GENERATION_OPTIONS'
  | 'BAD_CACHE_DIR'
  | 'INSUFFICIENT_MEMORY'
  | 'DECODE_LOOP_UNAVAILABLE'
  | 'INCOMPATIBLE_OPTIONS'
  | 'BAD_LOAD_OPTIONS'
  | 'PROMPT_TOO_LONG'
  | 'OUTPUT_WOULD_OVERWRITE_INPUT'
  | 'OUTPUT_NOT_REGULAR_FILE'
  | 'OUTPUT_NOT_DIRECTORY'
  | 'ENGINE_CLOSED'
  | 'UNSUPPORTED_PLATFORM';

/** A model-level error: a code and a sentence saying what was expected, what was found, and what to do. */
export class ModelError extends Error {
  readonly code: ModelErrorCode;

  constructor(code: ModelErrorCode, message: string) {
    super(message);
    this.name = 'ModelError';
    this.code = code;
  }
}
