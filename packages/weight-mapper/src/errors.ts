import type { MappingReport } from './report.js';

/** Every code a MappingError can carry. README.md lists the same codes (a test checks). */
export const MAPPING_ERROR_CODES = [
  'CONFIG_INVALID',
  'MISSING_TENSOR',
  'SHAPE_MISMATCH',
  'DTYPE_MISMATCH',
  'UNSUPPORTED_DTYPE',
  'EXTRA_LAYERS',
  'DUPLICATE_NAME',
  'BAD_TABLE',
  'UNMAPPED_TENSOR',
] as const;

export type MappingErrorCode = (typeof MAPPING_ERROR_CODES)[number];

/**
 * Thrown when a checkpoint cannot be mapped onto a component's parameters.
 * The message names the checkpoint file and tensor, what was expected and
 * what was found; `report` (when mapping got that far) holds the full
 * account: every missing name with its nearest checkpoint names.
 */
export class MappingError extends Error {
  readonly code: MappingErrorCode;
  /** The checkpoint file involved, when there is one. */
  readonly file: string | undefined;
  /** The checkpoint tensor involved, when there is one. */
  readonly tensor: string | undefined;
  readonly report: MappingReport | undefined;

  constructor(code: MappingErrorCode, message: string, where: { file?: string; tensor?: string; report?: MappingReport } = {}) {
    super(message);
    this.name = 'MappingError';
    this.code = code;
    this.file = where.file;
    this.tensor = where.tensor;
    this.report = where.report;
  }
}
