import type { ConfigObject } from '@vlmkit/config';

/** What went wrong, as a stable code callers can branch on. */
export type ProcessorErrorCode =
  /** The bytes are not an image that can be decoded (or the path cannot be read or is not a regular file). */
  | 'NOT_AN_IMAGE'
  /** The image has more pixels, or its file more bytes, than the decode limits allow. */
  | 'IMAGE_TOO_LARGE'
  /** An image mode / channel layout the PIL-compatible conversion does not handle. */
  | 'UNSUPPORTED_IMAGE'
  /** A size, factor or option that cannot be processed (zero sizes, extreme aspect ratios). */
  | 'INVALID_SIZE'
  /** preprocessor_config.json (or another processor file) is missing or has a bad field. */
  | 'INVALID_PROCESSOR_CONFIG'
  /** tokenizer.json / tokenizer_config.json / chat template problems. */
  | 'TOKENIZER_ERROR'
  /** Prompt and images do not fit together (placeholder counts, missing images). */
  | 'INVALID_INPUT'
  /** A video file was given but no decoder is installed (the optional dependency node-av). */
  | 'NO_VIDEO_DECODER'
  /** FFmpeg cannot open or decode the file as a video (or the path is not a regular file). */
  | 'NOT_A_VIDEO'
  /** A video file over the size limit, or frames over the pixel limit. */
  | 'VIDEO_TOO_LARGE'
  /** A chat template ran past a render limit (time, output length, loop iterations, range size, nesting). */
  | 'TEMPLATE_LIMIT'
  /** What this platform cannot do (a file path or a video file in the browser); the message says what to pass instead. */
  | 'UNSUPPORTED_PLATFORM';

/** Thrown by every @vlmkit/processors function on bad input; `code` is stable, `message` says what to fix. */
export class ProcessorError extends Error {
  override readonly name = 'ProcessorError';
  constructor(
    readonly code: ProcessorErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Where a processor reader's settings come from, as its errors name them: a file and, for the
 * settings save_pretrained nests in processor_config.json, the key they sit under.
 */
export interface SettingsSource {
  readonly file: string;
  readonly key?: string;
}

/** The most pixels one image (or video frame) may be processed at, whatever a config asks: 4096 x 4096. */
export const MAX_PROCESSED_PIXELS = 4096 * 4096;

/**
 * HF sets every key of a processor settings object on the instance, so `null` there is None, not
 * the class default: a step switched off, or an error on the first image. vlmkit's readers take
 * null for absent, so the keys they read are refused when null.
 */
export function refuseNullSettings(c: ConfigObject, keys: readonly string[]): void {
  for (const key of keys) {
    if (c.json[key] === null) {
      c.fail('INVALID_CONFIG', key, 'is null, which HF takes as None, not the default (a step skipped, or an error); set it or drop it.');
    }
  }
}
