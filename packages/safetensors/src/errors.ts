/**
 * Typed errors. Every failure of this package is a SafetensorsError whose
 * message names the file (and tensor, when there is one), says what was
 * expected and what was found, so a user can act on it without a debugger.
 */

/** Every code, grouped by where it arises. README.md's table lists the same codes (a test checks). */
export const ERROR_CODES = [
  // opening a file
  'FILE_NOT_FOUND',
  'NOT_A_FILE',
  'IO_ERROR',
  'FILE_TOO_SMALL',
  'FILE_TOO_LARGE',
  'FILE_OUTSIDE_DIR',
  'DUPLICATE_FILE',
  'UNSUPPORTED_PLATFORM',
  // HTTP sources (range requests)
  'HTTP_ERROR',
  'RANGE_NOT_SUPPORTED',
  'SOURCE_CHANGED',
  // the header
  'HEADER_TOO_LARGE',
  'HEADER_PAST_EOF',
  'HEADER_NOT_UTF8',
  'HEADER_NOT_JSON',
  'JSON_TOO_DEEP',
  'DUPLICATE_KEY',
  'HEADER_NOT_OBJECT',
  'BAD_METADATA',
  // one header entry
  'ENTRY_NOT_OBJECT',
  'UNKNOWN_DTYPE',
  'UNSUPPORTED_DTYPE',
  'BAD_SHAPE',
  'BAD_OFFSETS',
  'SIZE_MISMATCH',
  'OFFSET_OUT_OF_RANGE',
  // the data section as a whole
  'OVERLAPPING_TENSORS',
  'DATA_GAP',
  'TRAILING_BYTES',
  // reading
  'TENSOR_NOT_FOUND',
  'FILE_CLOSED',
  'SHORT_READ',
  'TENSOR_TOO_LARGE',
  'UNSUPPORTED_CONVERSION',
  // checkpoints (directories, sharded indexes)
  'INDEX_TOO_LARGE',
  'INDEX_NOT_JSON',
  'INDEX_BAD_WEIGHT_MAP',
  'INDEX_MISMATCH',
  'SHARD_OUTSIDE_DIR',
  'SHARD_MISSING',
  'DUPLICATE_TENSOR',
  'NO_SAFETENSORS',
  'NO_MODEL_SAFETENSORS',
  'BAD_TRANSFORMERS_WEIGHTS',
  // writing
  'BAD_TENSOR_NAME',
  'DATA_TYPE_MISMATCH',
] as const;

export type SafetensorsErrorCode = (typeof ERROR_CODES)[number];

export interface SafetensorsErrorDetails {
  file?: string;
  tensor?: string;
  cause?: unknown;
}

export class SafetensorsError extends Error {
  readonly code: SafetensorsErrorCode;
  readonly file?: string;
  readonly tensor?: string;

  constructor(code: SafetensorsErrorCode, message: string, details: SafetensorsErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'SafetensorsError';
    this.code = code;
    if (details.file !== undefined) this.file = details.file;
    if (details.tensor !== undefined) this.tensor = details.tensor;
  }
}

/** Throws a SafetensorsError whose message starts with the file (and tensor). */
export function fail(code: SafetensorsErrorCode, what: string, details: SafetensorsErrorDetails = {}): never {
  const where = [details.file, details.tensor === undefined ? undefined : `tensor '${details.tensor}'`]
    .filter((s) => s !== undefined)
    .join(': ');
  throw new SafetensorsError(code, where === '' ? what : `${where}: ${what}`, details);
}

/** A short, bounded rendering of a found JSON value for messages. */
export function show(value: unknown): string {
  let s: string;
  try {
    s = value === undefined ? 'undefined' : JSON.stringify(value);
  } catch {
    try {
      s = String(value);
    } catch {
      s = Array.isArray(value) ? 'an array' : typeof value; // too deep or cyclic to render
    }
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
