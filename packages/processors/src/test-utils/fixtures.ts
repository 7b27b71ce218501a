import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** test-fixtures/processors, from this package's sources. */
export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '../../../../test-fixtures/processors');

export function fixturePath(...parts: string[]): string {
  return join(FIXTURES, ...parts);
}

export function readJson<T>(...parts: string[]): T {
  return JSON.parse(readFileSync(fixturePath(...parts), 'utf8')) as T;
}

export function readBytes(...parts: string[]): Uint8Array {
  return new Uint8Array(readFileSync(fixturePath(...parts)));
}

export function readF32(...parts: string[]): Float32Array {
  const b = readFileSync(fixturePath(...parts));
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

export interface StTensor {
  dtype: string;
  shape: number[];
  data: Float32Array | BigInt64Array;
}

/** A minimal safetensors reader for HF's expected outputs (F32 and I64 only; tests alone use it). */
export function readSafetensors(...parts: string[]): Record<string, StTensor> {
  const b = readFileSync(fixturePath(...parts));
  const n = Number(b.readBigUInt64LE(0));
  const header = JSON.parse(b.subarray(8, 8 + n).toString('utf8')) as Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] }
  >;
  const out: Record<string, StTensor> = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [s, e] = t.data_offsets;
    const bytes = b.buffer.slice(b.byteOffset + 8 + n + s, b.byteOffset + 8 + n + e);
    if (t.dtype === 'F32') out[name] = { dtype: t.dtype, shape: t.shape, data: new Float32Array(bytes) };
    else if (t.dtype === 'I64') out[name] = { dtype: t.dtype, shape: t.shape, data: new BigInt64Array(bytes) };
  }
  return out;
}

/** The largest absolute difference of two equally long float arrays. */
export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** An int64 tensor's values as rows of `width` numbers (grid_thw, image_sizes). */
export function int64Rows(t: StTensor, width: number): number[][] {
  const v = Array.from(t.data as BigInt64Array, Number);
  return Array.from({ length: v.length / width }, (_, i) => v.slice(i * width, (i + 1) * width));
}
