/**
 * Parsing and validating a safetensors header. Layout of a file:
 *   u64 little-endian N | N bytes of UTF-8 JSON | data section
 * The JSON maps tensor names to {dtype, shape, data_offsets: [begin, end]}
 * (offsets relative to the data section) plus an optional "__metadata__"
 * string->string map. Checks follow the Rust library (safetensors 0.8
 * `Metadata::validate`), with one distinct error code per kind of defect.
 */
import { DTYPE_SIZE, DTYPES, type DType, elementCount, isDType, UNSUPPORTED_DTYPES } from './dtype.js';
import { fail, show } from './errors.js';
import { MAX_JSON_DEPTH, scanJson, showPath } from './json-guard.js';

/** Same cap as the Rust library's MAX_HEADER_SIZE: a bigger header is not a real checkpoint. */
export const MAX_HEADER_SIZE = 100_000_000;

export interface HeaderEntry {
  dtype: DType;
  shape: number[];
  /** Offsets relative to the start of the data section. */
  begin: number;
  end: number;
}

export interface ParsedHeader {
  metadata: Record<string, string>;
  entries: Map<string, HeaderEntry>;
}

/** Validates the 8-byte length prefix against the file size; returns the header length. */
export function checkHeaderLength(file: string, prefix: Uint8Array, fileSize: number): number {
  if (fileSize < 8) {
    fail('FILE_TOO_SMALL', `expected at least 8 bytes (the header length), found a file of ${fileSize} bytes.`, { file });
  }
  const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_SIZE)) {
    fail(
      'HEADER_TOO_LARGE',
      `the header length prefix says ${n} bytes, expected at most ${MAX_HEADER_SIZE}; the file is not safetensors or is corrupt.`,
      { file },
    );
  }
  const headerLength = Number(n);
  if (8 + headerLength > fileSize) {
    fail(
      'HEADER_PAST_EOF',
      `expected the ${headerLength}-byte header its length prefix announces, found only ${fileSize - 8} bytes after the prefix; the file is truncated or not safetensors.`,
      { file },
    );
  }
  return headerLength;
}

/** Parses and validates the header JSON given the length of the data section. */
export function parseHeader(file: string, bytes: Uint8Array, dataLength: number): ParsedHeader {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch (cause) {
    return fail('HEADER_NOT_UTF8', `expected the ${bytes.length}-byte header to be UTF-8 JSON, found invalid UTF-8.`, { file, cause });
  }
  const defect = scanJson(text);
  if (defect?.kind === 'too-deep') {
    fail(
      'JSON_TOO_DEEP',
      `expected the header JSON nested at most ${MAX_JSON_DEPTH} deep (a real header nests 3), found deeper nesting at byte ${defect.offset} of the header.`,
      { file },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    return fail('HEADER_NOT_JSON', `expected the header to be JSON, found ${show(text.slice(0, 60))} (${(cause as Error).message}).`, {
      file,
      cause,
    });
  }
  if (defect?.kind === 'duplicate-key') {
    fail(
      'DUPLICATE_KEY',
      `expected each key once in ${showPath(defect.path)} of the header, found ${show(defect.key)} twice; the file is ambiguous.`,
      { file },
    );
  }
  if (!isPlainObject(json)) {
    return fail('HEADER_NOT_OBJECT', `expected the header to be a JSON object of tensors, found ${show(json)}.`, { file });
  }

  let metadata: Record<string, string> = {};
  const entries = new Map<string, HeaderEntry>();
  for (const [name, value] of Object.entries(json)) {
    if (name === '__metadata__') {
      metadata = checkMetadata(file, value);
      continue;
    }
    entries.set(name, checkEntry(file, name, value, dataLength));
  }
  checkCoverage(file, entries, dataLength);
  return { metadata, entries };
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function checkMetadata(file: string, value: unknown): Record<string, string> {
  if (value === null) return {}; // the Rust library reads null as "no metadata"
  if (!isPlainObject(value)) {
    return fail('BAD_METADATA', `expected "__metadata__" to be an object of strings, found ${show(value)}.`, { file });
  }
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') {
      fail('BAD_METADATA', `expected "__metadata__" value for key '${k}' to be a string, found ${show(v)}.`, { file });
    }
    out[k] = v;
  }
  return { ...out };
}

function checkEntry(file: string, tensor: string, value: unknown, dataLength: number): HeaderEntry {
  const where = { file, tensor };
  if (!isPlainObject(value)) {
    return fail('ENTRY_NOT_OBJECT', `expected an object {dtype, shape, data_offsets}, found ${show(value)}.`, where);
  }
  const { dtype, shape, data_offsets: offsets } = value;
  if (!isDType(dtype)) {
    if (typeof dtype === 'string' && UNSUPPORTED_DTYPES.includes(dtype)) {
      fail(
        'UNSUPPORTED_DTYPE',
        `expected dtype to be one of ${DTYPES.join(', ')}, found ${dtype}, a safetensors dtype this package does not read yet.`,
        where,
      );
    }
    fail('UNKNOWN_DTYPE', `expected dtype to be one of ${DTYPES.join(', ')}, found ${show(dtype)}.`, where);
  }
  const count = elementCount(shape);
  if (count === null) {
    fail('BAD_SHAPE', `expected shape to be an array of non-negative safe integers with a safe product, found ${show(shape)}.`, where);
  }
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    !offsets.every((o) => typeof o === 'number' && Number.isSafeInteger(o) && o >= 0) ||
    offsets[0] > offsets[1]
  ) {
    fail('BAD_OFFSETS', `expected data_offsets to be [begin, end] with integers 0 <= begin <= end, found ${show(offsets)}.`, where);
  }
  const [begin, end] = offsets as [number, number];
  const expected = count * DTYPE_SIZE[dtype];
  if (end - begin !== expected) {
    fail(
      'SIZE_MISMATCH',
      `expected data_offsets to span ${expected} bytes (shape ${show(shape)} of ${dtype}), found [${begin}, ${end}], which span ${end - begin}.`,
      where,
    );
  }
  if (end > dataLength) {
    fail(
      'OFFSET_OUT_OF_RANGE',
      `expected data_offsets within the ${dataLength}-byte data section, found [${begin}, ${end}]; the file may be truncated.`,
      where,
    );
  }
  return { dtype, shape: shape as number[], begin, end };
}

/**
 * Tensors must tile the data section exactly: no overlap, no gap, no trailing
 * bytes. The Rust library rejects all three (InvalidOffset /
 * MetadataIncompleteBuffer); we do too, so a file we accept loads in Python.
 */
function checkCoverage(file: string, entries: Map<string, HeaderEntry>, dataLength: number): void {
  const sorted = [...entries].sort((a, b) => a[1].begin - b[1].begin || a[1].end - b[1].end);
  let cursor = 0;
  let previous: string | undefined;
  for (const [name, e] of sorted) {
    if (e.begin < cursor) {
      fail(
        'OVERLAPPING_TENSORS',
        `data_offsets [${e.begin}, ${e.end}] overlap tensor '${previous}', which ends at ${cursor}; expected each tensor to start where the previous one ends.`,
        { file, tensor: name },
      );
    }
    if (e.begin > cursor) {
      fail(
        'DATA_GAP',
        `data_offsets [${e.begin}, ${e.end}] leave bytes ${cursor}..${e.begin} of the data section unused; expected it to start at ${cursor}, where ${previous === undefined ? 'the data section begins' : `tensor '${previous}' ends`}.`,
        { file, tensor: name },
      );
    }
    cursor = e.end;
    previous = name;
  }
  if (cursor !== dataLength) {
    fail(
      'TRAILING_BYTES',
      `the tensors end at byte ${cursor} of the data section, but it holds ${dataLength} bytes; expected no bytes after the last tensor.`,
      { file },
    );
  }
}
