/**
 * Files written by the Python library (torch 2.13, safetensors 0.8) read back
 * with the exact values, and our writer reproduces Python's bytes.
 * Fixture and sidecar: tools/make-fixture.py (run by hand; tests never run Python).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint, SafetensorsFile, serializeSafetensors, type Tensor } from './index.js';

const fixture = fileURLToPath(new URL('./__fixtures__/python-written.safetensors', import.meta.url));
const sidecar = JSON.parse(readFileSync(new URL('./__fixtures__/python-written.json', import.meta.url), 'utf8')) as {
  metadata: Record<string, string>;
  tensors: Record<string, { dtype: string; shape: number[]; values: unknown[]; bits?: number[] }>;
};
const TORCH_DTYPE: Record<string, string> = {
  float64: 'F64',
  float32: 'F32',
  float16: 'F16',
  bfloat16: 'BF16',
  int64: 'I64',
  int32: 'I32',
  int16: 'I16',
  int8: 'I8',
  uint8: 'U8',
  bool: 'BOOL',
};
const parseFloatRepr = (s: string) => (s === 'nan' ? NaN : s === 'inf' ? Infinity : s === '-inf' ? -Infinity : Number(s));
/** Object.is, but any NaN equals any NaN. */
const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

describe('a file written by Python safetensors 0.8', () => {
  let file: SafetensorsFile;
  beforeAll(async () => {
    file = await SafetensorsFile.open(fixture);
  });
  afterAll(() => file.close());

  it('has every dtype, the metadata and the tensor names', () => {
    expect(file.metadata).toEqual(sidecar.metadata);
    expect(file.names().sort()).toEqual(Object.keys(sidecar.tensors).sort());
    expect(new Set(file.names().map((n) => file.info(n).dtype))).toEqual(new Set(Object.values(TORCH_DTYPE)));
  });

  it.each(Object.entries(sidecar.tensors))('reads %s exactly', async (name, want) => {
    const t = await file.read(name);
    expect(t.dtype).toBe(TORCH_DTYPE[want.dtype]);
    expect(t.shape).toEqual(want.shape);
    switch (t.dtype) {
      case 'F64':
      case 'F32': {
        const got = [...(t.data as Float64Array | Float32Array)];
        const exp = (want.values as string[]).map(parseFloatRepr);
        expect(got.length).toBe(exp.length);
        got.forEach((v, i) => {
          expect(same(v, exp[i]!), `${name}[${i}] = ${v}, expected ${exp[i]}`).toBe(true);
        });
        break;
      }
      case 'F16':
      case 'BF16': {
        expect([...t.data]).toEqual(want.bits);
        const f32 = await Checkpoint.open(fixture).then(async (c) => {
          const x = await c.readFloat32(name);
          await c.close();
          return x;
        });
        const exp = (want.values as string[]).map(parseFloatRepr);
        [...f32].forEach((v, i) => {
          expect(same(v, exp[i]!), `${name}[${i}] = ${v}, expected ${exp[i]}`).toBe(true);
        });
        break;
      }
      case 'I64':
        expect([...(t.data as BigInt64Array)].map(String)).toEqual(want.values);
        break;
      case 'BOOL':
        expect([...t.data].map((v) => v === 1)).toEqual(want.values);
        break;
      default:
        expect([...(t.data as Int32Array)]).toEqual(want.values);
    }
  });

  it('is reproduced byte for byte by serializeSafetensors', async () => {
    const tensors: Record<string, Tensor> = {};
    for (const name of file.names()) tensors[name] = await file.read(name);
    const ours = serializeSafetensors(tensors, file.metadata);
    expect(Buffer.from(ours).equals(readFileSync(fixture))).toBe(true);
  });
});
