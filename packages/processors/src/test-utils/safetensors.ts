import { readFileSync } from 'node:fs';

/** A tensor of an expected.safetensors fixture: int64 as BigInt64Array, float32 as Float32Array. */
export interface FixtureTensor {
  dtype: string;
  shape: number[];
  data: BigInt64Array | Float32Array | Uint8Array;
}

/** Reads a (small, little-endian) .safetensors file: 8-byte header length, JSON header, data. Tests only. */
export function readSafetensors(path: string): Record<string, FixtureTensor> {
  const b = readFileSync(path);
  const n = Number(b.readBigUInt64LE(0));
  const header = JSON.parse(b.subarray(8, 8 + n).toString('utf8')) as Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] }
  >;
  const out: Record<string, FixtureTensor> = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const bytes = b.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]);
    const buf = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    if (t.dtype === 'I64') out[name] = { dtype: 'int64', shape: t.shape, data: new BigInt64Array(buf) };
    else if (t.dtype === 'F32') out[name] = { dtype: 'float32', shape: t.shape, data: new Float32Array(buf) };
    else if (t.dtype === 'U8') out[name] = { dtype: 'uint8', shape: t.shape, data: new Uint8Array(buf) };
    else throw new Error(`${path}: ${name} has dtype ${t.dtype}, which the fixture reader does not handle`);
  }
  return out;
}
