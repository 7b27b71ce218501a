/**
 * Malformed-file corpus: each file is rejected at open with its own error
 * code, and the message names the file. Generated here into a temp dir.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SafetensorsError, type SafetensorsErrorCode, SafetensorsFile } from './index.js';
import { rawFile, rejection, tempDir } from './test-utils/files.js';

const f32 = (shape: number[], begin: number, end: number) => ({ dtype: 'F32', shape, data_offsets: [begin, end] });

/** name -> [expected code, file bytes (or null: do not create the file)] */
const corpus: Record<string, [SafetensorsErrorCode, Uint8Array | null]> = {
  'missing.safetensors': ['FILE_NOT_FOUND', null],
  'too-small.safetensors': ['FILE_TOO_SMALL', new Uint8Array([1, 0, 0])],
  'header-huge.safetensors': ['HEADER_TOO_LARGE', rawFile({}, 0, 2n ** 62n)],
  'header-past-eof.safetensors': ['HEADER_PAST_EOF', rawFile({}, 0, 1000n)],
  'header-not-utf8.safetensors': ['HEADER_NOT_UTF8', rawFile(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]))],
  'header-not-json.safetensors': ['HEADER_NOT_JSON', rawFile('{"a": {"dtype": ')],
  'header-array.safetensors': ['HEADER_NOT_OBJECT', rawFile([1, 2])],
  'entry-number.safetensors': ['ENTRY_NOT_OBJECT', rawFile({ w: 3 })],
  'dtype-unknown.safetensors': ['UNKNOWN_DTYPE', rawFile({ w: { dtype: 'F33', shape: [1], data_offsets: [0, 4] } }, 4)],
  'dtype-fp8.safetensors': ['UNSUPPORTED_DTYPE', rawFile({ w: { dtype: 'F8_E4M3', shape: [1], data_offsets: [0, 1] } }, 1)],
  'shape-negative.safetensors': ['BAD_SHAPE', rawFile({ w: f32([2, -1], 0, 8) }, 8)],
  'offsets-reversed.safetensors': ['BAD_OFFSETS', rawFile({ w: f32([0], 8, 0) }, 8)],
  'size-mismatch.safetensors': ['SIZE_MISMATCH', rawFile({ w: f32([3], 0, 8) }, 8)],
  'truncated-data.safetensors': ['OFFSET_OUT_OF_RANGE', rawFile({ w: f32([4], 0, 16) }, 12)],
  'overlap.safetensors': ['OVERLAPPING_TENSORS', rawFile({ a: f32([2], 0, 8), b: f32([2], 4, 12) }, 12)],
  'gap.safetensors': ['DATA_GAP', rawFile({ a: f32([1], 0, 4), b: f32([1], 8, 12) }, 12)],
  'trailing.safetensors': ['TRAILING_BYTES', rawFile({ a: f32([1], 0, 4) }, 9)],
  'metadata-number.safetensors': ['BAD_METADATA', rawFile({ __metadata__: { epoch: 3 } })],
  'a-directory.safetensors': ['NOT_A_FILE', null],
};

describe('malformed-file corpus', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir();
    for (const [name, [, bytes]] of Object.entries(corpus)) if (bytes !== null) await writeFile(join(dir, name), bytes);
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'a-directory.safetensors'));
  });

  it('has at least 15 files, each with its own error code', () => {
    const codes = Object.values(corpus).map(([code]) => code);
    expect(codes.length).toBeGreaterThanOrEqual(15);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it.each(Object.entries(corpus))('%s is rejected', async (name, [code]) => {
    const path = join(dir, name);
    const err = await SafetensorsFile.open(path).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SafetensorsError);
    const e = err as SafetensorsError;
    expect(e.code).toBe(code);
    expect(e.file).toBe(path);
    expect(e.message).toContain(path);
    expect(e.message).toMatch(/expected/i);
  });

  it('names the tensor for per-entry defects', async () => {
    const err = await rejection(SafetensorsFile.open(join(dir, 'size-mismatch.safetensors')));
    expect(err.tensor).toBe('w');
    expect(err.message).toContain("tensor 'w'");
    expect(err.message).toContain('expected data_offsets to span 12 bytes');
    expect(err.message).toContain('which span 8');
  });

  it('names both tensors when they overlap', async () => {
    const err = await rejection(SafetensorsFile.open(join(dir, 'overlap.safetensors')));
    expect(err.message).toMatch(/'b'.*'a'/);
  });

  it('rejects a huge length prefix without allocating it', async () => {
    // 2^62 would throw RangeError (or exhaust memory) if we tried; we must fail on the number.
    const err = await rejection(SafetensorsFile.open(join(dir, 'header-huge.safetensors')));
    expect(err.message).toContain('at most 100000000');
  });
});

describe('more header defects (same codes, other shapes of the defect)', () => {
  const cases: Array<[string, SafetensorsErrorCode, Uint8Array]> = [
    ['shape not an array', 'BAD_SHAPE', rawFile({ w: { dtype: 'F32', shape: 4, data_offsets: [0, 16] } }, 16)],
    ['shape with a fraction', 'BAD_SHAPE', rawFile({ w: f32([1.5], 0, 4) }, 4)],
    ['shape overflowing a safe integer', 'BAD_SHAPE', rawFile({ w: f32([2 ** 30, 2 ** 30, 2 ** 30], 0, 4) }, 4)],
    ['offsets of length 3', 'BAD_OFFSETS', rawFile({ w: { dtype: 'F32', shape: [1], data_offsets: [0, 4, 8] } }, 4)],
    ['offsets as strings', 'BAD_OFFSETS', rawFile({ w: { dtype: 'F32', shape: [1], data_offsets: ['0', '4'] } }, 4)],
    ['offsets missing', 'BAD_OFFSETS', rawFile({ w: { dtype: 'F32', shape: [1] } }, 4)],
    ['dtype missing', 'UNKNOWN_DTYPE', rawFile({ w: { shape: [1], data_offsets: [0, 4] } }, 4)],
    ['dtype lowercase', 'UNKNOWN_DTYPE', rawFile({ w: { dtype: 'f32', shape: [1], data_offsets: [0, 4] } }, 4)],
    ['entry null', 'ENTRY_NOT_OBJECT', rawFile({ w: null })],
    ['entry array', 'ENTRY_NOT_OBJECT', rawFile({ w: [] })],
    ['header a string', 'HEADER_NOT_OBJECT', rawFile('"hello"')],
    ['header null', 'HEADER_NOT_OBJECT', rawFile('null')],
    ['header with a BOM', 'HEADER_NOT_JSON', rawFile(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))],
    ['metadata an array', 'BAD_METADATA', rawFile({ __metadata__: ['a'] })],
    ['gap before the first tensor', 'DATA_GAP', rawFile({ a: f32([1], 4, 8) }, 8)],
    ['zero-size tensor inside another', 'OVERLAPPING_TENSORS', rawFile({ a: f32([2], 0, 8), z: f32([0], 4, 4) }, 8)],
    ['data section without tensors', 'TRAILING_BYTES', rawFile({}, 3)],
    ['header length 1 less than the header', 'HEADER_NOT_JSON', rawFile('{"a":1}', 0, 6n)],
  ];
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir();
  });

  it.each(cases)('%s -> %s', async (label, code, bytes) => {
    const path = join(dir, `${label.replaceAll(' ', '-')}.safetensors`);
    await writeFile(path, bytes);
    const err = await SafetensorsFile.open(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SafetensorsError);
    expect((err as SafetensorsError).code).toBe(code);
    expect((err as SafetensorsError).message).toContain(path);
  });

  it('accepts edge cases that are valid: empty header, null metadata, zero-size tensors, scalars', async () => {
    const ok: Array<[string, Uint8Array]> = [
      ['empty', rawFile({})],
      ['null-metadata', rawFile({ __metadata__: null })],
      ['zero-size', rawFile({ z: f32([0, 5], 0, 0), y: f32([3, 0], 0, 0), a: f32([1], 0, 4) }, 4)],
      ['scalar', rawFile({ s: f32([], 0, 4) }, 4)],
      ['padded', rawFile('{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}      ', 4)],
    ];
    for (const [name, bytes] of ok) {
      const path = join(dir, `ok-${name}.safetensors`);
      await writeFile(path, bytes);
      const f = await SafetensorsFile.open(path);
      for (const n of f.names()) await f.read(n);
      await f.close();
    }
  });
});
