/**
 * Writing safetensors files the way the Python library (safetensors 0.8) does,
 * so the bytes are deterministic and, for the same tensors and metadata,
 * identical to Python's:
 * - data section ordered by dtype, widest first (I64, F64, F32, I32, BF16,
 *   F16, I16, I8, U8, BOOL), then by name, which keeps every tensor aligned
 *   to its element size;
 * - header keys in that same order, "__metadata__" first (its keys sorted;
 *   Python's order there follows a hash map, so only one key matches exactly);
 * - header JSON padded with spaces to a multiple of 8 bytes.
 */

import {
  arrayNameOf,
  DTYPE_SIZE,
  DTYPE_WRITE_ORDER,
  DTYPES,
  dataMatches,
  elementCount,
  HOST_IS_LITTLE_ENDIAN,
  isDType,
  swapBytesInPlace,
  type Tensor,
} from './dtype.js';
import { fail, show } from './errors.js';

export interface Planned {
  name: string;
  bytes: Uint8Array;
}

/** Validates the tensors and lays out the header; throws SafetensorsError on bad input. */
export function plan(
  tensors: Record<string, Tensor>,
  metadata: Record<string, string> | undefined,
  file?: string,
): { header: Uint8Array; parts: Planned[] } {
  const order = (t: Tensor) => DTYPE_WRITE_ORDER.indexOf(t.dtype);
  const entries = Object.entries(tensors);
  for (const [name, t] of entries) checkTensor(name, t, file);
  entries.sort(([an, a], [bn, b]) => order(a) - order(b) || (an < bn ? -1 : an > bn ? 1 : 0));

  const header: Record<string, unknown> = {};
  if (metadata !== undefined) {
    const sorted: Record<string, string> = {};
    for (const key of Object.keys(metadata).sort()) {
      const value = metadata[key];
      if (typeof value !== 'string')
        fail('BAD_METADATA', `expected metadata value for key '${key}' to be a string, found ${show(value)}.`, { file });
      sorted[key] = value;
    }
    header['__metadata__'] = sorted;
  }
  const parts: Planned[] = [];
  let offset = 0;
  for (const [name, t] of entries) {
    const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes.length] };
    offset += bytes.length;
    parts.push({ name, bytes: HOST_IS_LITTLE_ENDIAN ? bytes : littleEndianCopy(bytes, DTYPE_SIZE[t.dtype]) });
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const headerBytes = new Uint8Array(8 + padded).fill(0x20, 8 + json.length);
  new DataView(headerBytes.buffer).setBigUint64(0, BigInt(padded), true);
  headerBytes.set(json, 8);
  return { header: headerBytes, parts };
}

function checkTensor(name: string, t: Tensor, file: string | undefined): void {
  const where = { file, tensor: name };
  if (name === '__metadata__' || name === '') {
    fail('BAD_TENSOR_NAME', `expected a non-empty tensor name other than "__metadata__", found ${show(name)}.`, where);
  }
  if (typeof t !== 'object' || t === null) fail('DATA_TYPE_MISMATCH', `expected a tensor {dtype, shape, data}, found ${show(t)}.`, where);
  if (!isDType(t.dtype)) fail('UNKNOWN_DTYPE', `expected dtype to be one of ${DTYPES.join(', ')}, found ${show(t.dtype)}.`, where);
  const count = elementCount(t.shape);
  if (count === null) fail('BAD_SHAPE', `expected shape to be an array of non-negative safe integers, found ${show(t.shape)}.`, where);
  if (!dataMatches(t.dtype, t.data)) {
    fail('DATA_TYPE_MISMATCH', `expected data for dtype ${t.dtype} in a ${arrayNameOf(t.dtype)}, found ${describeData(t.data)}.`, where);
  }
  if (t.data.length !== count) {
    fail('SIZE_MISMATCH', `expected ${count} elements for shape ${show(t.shape)}, found ${t.data.length} in data.`, where);
  }
}

function describeData(data: unknown): string {
  if (ArrayBuffer.isView(data)) return (data as unknown as { [Symbol.toStringTag]: string })[Symbol.toStringTag];
  return show(data);
}

function littleEndianCopy(bytes: Uint8Array, elementSize: number): Uint8Array {
  const copy = bytes.slice();
  swapBytesInPlace(copy, elementSize);
  return copy;
}

/** The whole file in memory. For big checkpoints prefer writeSafetensors, which streams. */
export function serializeSafetensors(tensors: Record<string, Tensor>, metadata?: Record<string, string>): Uint8Array {
  const { header, parts } = plan(tensors, metadata);
  const total = parts.reduce((n, p) => n + p.bytes.length, header.length);
  const out = new Uint8Array(total);
  out.set(header, 0);
  let at = header.length;
  for (const p of parts) {
    out.set(p.bytes, at);
    at += p.bytes.length;
  }
  return out;
}
