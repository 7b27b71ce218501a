import { existsSync } from 'node:fs';
import { readdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DTYPE_SIZE, type DType, SafetensorsFile, serializeSafetensors, type Tensor, writeSafetensors } from './index.js';
import { rawFile, rejection, tempDir } from './test-utils/files.js';

/** One tensor of each dtype, with values that exercise the range of the type. */
function everyDtype(): Record<string, Tensor> {
  return {
    f64: { dtype: 'F64', shape: [2, 2], data: new Float64Array([Math.PI, -0, 1e-310, -Infinity]) },
    f32: { dtype: 'F32', shape: [3], data: new Float32Array([1.5, NaN, -3.4e38]) },
    f16: { dtype: 'F16', shape: [3], data: new Uint16Array([0x3c00, 0x0001, 0xfc00]) },
    bf16: { dtype: 'BF16', shape: [1, 3], data: new Uint16Array([0x3f80, 0x7f7f, 0x8001]) },
    i64: { dtype: 'I64', shape: [2], data: new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n]) },
    i32: { dtype: 'I32', shape: [2], data: new Int32Array([-(2 ** 31), 2 ** 31 - 1]) },
    i16: { dtype: 'I16', shape: [2], data: new Int16Array([-32768, 32767]) },
    i8: { dtype: 'I8', shape: [3], data: new Int8Array([-128, 0, 127]) },
    u8: { dtype: 'U8', shape: [2], data: new Uint8Array([0, 255]) },
    bool: { dtype: 'BOOL', shape: [2, 1], data: new Uint8Array([1, 0]) },
    scalar: { dtype: 'F32', shape: [], data: new Float32Array([7]) },
    empty: { dtype: 'I64', shape: [0, 4], data: new BigInt64Array(0) },
  };
}

describe('write then read', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir();
  });

  it('round-trips every dtype with exact bits, shapes and metadata', async () => {
    const path = join(dir, 'all.safetensors');
    const tensors = everyDtype();
    await writeSafetensors(path, tensors, { format: 'pt', note: 'ünïcode "quoted"' });
    const f = await SafetensorsFile.open(path);
    expect(f.metadata).toEqual({ format: 'pt', note: 'ünïcode "quoted"' });
    expect(f.names().sort()).toEqual(Object.keys(tensors).sort());
    for (const [name, want] of Object.entries(tensors)) {
      const got = await f.read(name);
      expect(got.dtype).toBe(want.dtype);
      expect(got.shape).toEqual(want.shape);
      expect(got.data.constructor).toBe(want.data.constructor);
      expect(Buffer.from(got.data.buffer).equals(Buffer.from(want.data.buffer))).toBe(true);
      // Reading allocates exactly the tensor's bytes: the array owns its whole buffer.
      expect(got.data.buffer.byteLength).toBe(f.info(name).byteLength);
    }
    await f.close();
  });

  it('writes the same bytes whatever the insertion order, as serializeSafetensors', async () => {
    const tensors = everyDtype();
    const reversed = Object.fromEntries(Object.entries(tensors).reverse());
    const a = serializeSafetensors(tensors, { b: '2', a: '1' });
    const b = serializeSafetensors(reversed, { a: '1', b: '2' });
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
    const path = join(dir, 'same.safetensors');
    await writeSafetensors(path, reversed, { a: '1', b: '2' });
    expect((await readFile(path)).equals(Buffer.from(a))).toBe(true);
  });

  it('pads the header with spaces to 8 bytes and aligns every tensor to its element size', async () => {
    const bytes = serializeSafetensors(everyDtype());
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect(n % 8).toBe(0);
    const header = new TextDecoder().decode(bytes.subarray(8, 8 + n));
    expect(header).toMatch(/^\{.*\} *$/);
    const path = join(dir, 'aligned.safetensors');
    await writeFile(path, bytes);
    const f = await SafetensorsFile.open(path);
    for (const name of f.names()) {
      const info = f.info(name);
      expect(info.byteOffset % DTYPE_SIZE[info.dtype]).toBe(0);
    }
    // Data order: widest dtype first, then names (as the Python library).
    expect(f.names()).toEqual(['empty', 'i64', 'f64', 'f32', 'scalar', 'i32', 'bf16', 'f16', 'i16', 'i8', 'u8', 'bool']);
    await f.close();
  });

  it('reads tensors at offsets not aligned to their element size', async () => {
    // u8 [3] first pushes f64/f32/i16 to odd offsets (allowed by the format, never written by Python).
    const data = new Uint8Array(3 + 8 + 4 + 2);
    data.set([9, 8, 7], 0);
    const dv = new DataView(data.buffer);
    dv.setFloat64(3, -1.25, true);
    dv.setFloat32(11, 3.5, true);
    dv.setInt16(15, -300, true);
    const header = {
      b: { dtype: 'U8', shape: [3], data_offsets: [0, 3] },
      d: { dtype: 'F64', shape: [1], data_offsets: [3, 11] },
      f: { dtype: 'F32', shape: [1], data_offsets: [11, 15] },
      s: { dtype: 'I16', shape: [1], data_offsets: [15, 17] },
    };
    const path = join(dir, 'unaligned.safetensors');
    await writeFile(path, rawFile(header, data));
    const f = await SafetensorsFile.open(path);
    expect(f.info('d').byteOffset % 8).not.toBe(0);
    expect([...(await f.read('b')).data]).toEqual([9, 8, 7]);
    expect([...(await f.read('d')).data]).toEqual([-1.25]);
    expect([...(await f.read('f')).data]).toEqual([3.5]);
    expect([...(await f.read('s')).data]).toEqual([-300]);
    await f.close();
  });

  it('gives TensorInfo with absolute offsets into the file', async () => {
    const path = join(dir, 'info.safetensors');
    await writeSafetensors(path, { w: { dtype: 'F32', shape: [2], data: new Float32Array([1, 2]) } });
    const f = await SafetensorsFile.open(path);
    const info = f.info('w');
    const bytes = await readFile(path);
    expect(info).toEqual({ name: 'w', dtype: 'F32', shape: [2], file: path, byteOffset: bytes.length - 8, byteLength: 8 });
    expect(new Float32Array(bytes.buffer.slice(bytes.byteOffset + info.byteOffset, bytes.byteOffset + info.byteOffset + 8))).toEqual(
      new Float32Array([1, 2]),
    );
    await f.close();
  });

  it('lists the 3 nearest names when a tensor is missing', async () => {
    const path = join(dir, 'names.safetensors');
    const t = (): Tensor => ({ dtype: 'U8', shape: [1], data: new Uint8Array(1) });
    await writeSafetensors(path, {
      'layers.0.q.weight': t(),
      'layers.0.k.weight': t(),
      'layers.1.q.weight': t(),
      'norm.weight': t(),
      'embed.weight': t(),
    });
    const f = await SafetensorsFile.open(path);
    const err = await rejection(f.read('layers.0.v.weight'));
    expect(err.code).toBe('TENSOR_NOT_FOUND');
    expect(err.tensor).toBe('layers.0.v.weight');
    expect(err.message).toContain(path);
    expect(err.message).toContain("Nearest names present: 'layers.0.k.weight', 'layers.0.q.weight', 'layers.1.q.weight'.");
    expect(f.has('norm.weight')).toBe(true);
    expect(f.has('constructor')).toBe(false);
    await f.close();
    expect((await rejection(f.read('norm.weight'))).code).toBe('FILE_CLOSED');
    await f.close(); // idempotent
  });

  it('reports SHORT_READ when the file shrinks after open', async () => {
    const path = join(dir, 'shrinks.safetensors');
    await writeSafetensors(path, { w: { dtype: 'F32', shape: [4], data: new Float32Array(4) } });
    const f = await SafetensorsFile.open(path);
    await truncate(path, (await readFile(path)).length - 4);
    const err = await rejection(f.read('w'));
    expect(err.code).toBe('SHORT_READ');
    await f.close();
  });

  it.skipIf(!existsSync('/proc/self/fd'))('does not leak the file handle when open fails', async () => {
    const path = join(dir, 'bad.safetensors');
    await writeFile(path, rawFile('[]'));
    const before = (await readdir('/proc/self/fd')).length;
    for (let i = 0; i < 20; i++) await rejection(SafetensorsFile.open(path));
    expect((await readdir('/proc/self/fd')).length).toBe(before);
  });
});

describe('writer input validation', () => {
  const cases: Array<[string, string, Record<string, unknown>, Record<string, unknown>?]> = [
    ['unknown dtype', 'UNKNOWN_DTYPE', { w: { dtype: 'F8', shape: [1], data: new Uint8Array(1) } }],
    ['negative dim', 'BAD_SHAPE', { w: { dtype: 'U8', shape: [-1], data: new Uint8Array(1) } }],
    ['wrong array for the dtype', 'DATA_TYPE_MISMATCH', { w: { dtype: 'BF16', shape: [1], data: new Float32Array(1) } }],
    ['element count differs from the shape', 'SIZE_MISMATCH', { w: { dtype: 'F32', shape: [2, 2], data: new Float32Array(3) } }],
    ['reserved name', 'BAD_TENSOR_NAME', { __metadata__: { dtype: 'U8', shape: [1], data: new Uint8Array(1) } }],
    ['non-string metadata', 'BAD_METADATA', {}, { epoch: 3 }],
  ];
  it.each(cases)('%s -> %s', async (_label, code, tensors, metadata) => {
    const err = await rejection(() => serializeSafetensors(tensors as Record<string, Tensor>, metadata as Record<string, string>));
    expect(err.code).toBe(code);
  });

  it('accepts a Buffer for U8 data and a subarray view (writes only the view)', () => {
    const base = new Float32Array([1, 2, 3, 4]);
    const bytes = serializeSafetensors({
      u: { dtype: 'U8', shape: [2], data: Buffer.from([5, 6]) },
      v: { dtype: 'F32', shape: [2], data: base.subarray(1, 3) },
    });
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const data = bytes.slice(8 + n);
    expect([...new Float32Array(data.buffer, 0, 2)]).toEqual([2, 3]);
    expect([...data.subarray(8)]).toEqual([5, 6]);
  });

  it('covers every dtype in DTYPE_SIZE', () => {
    expect(Object.keys(DTYPE_SIZE).sort()).toEqual([...new Set(Object.values(everyDtype()).map((t) => t.dtype))].sort() as DType[]);
  });
});
