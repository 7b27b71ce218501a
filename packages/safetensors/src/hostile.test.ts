/**
 * Regression tests for defects the fuzzer (fuzz.test.ts) found: each failed
 * before its fix with a RangeError, a silent choice, or an unbounded read.
 */
import { mkdir, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Checkpoint, SafetensorsFile, serializeSafetensors } from './index.js';
import { MAX_JSON_DEPTH, scanJson } from './json-guard.js';
import { rawFile, rejection, tempDir } from './test-utils/files.js';

const deep = (open: string, close: string, n: number, inner = '') => open.repeat(n) + inner + close.repeat(n);
const f32 = (shape: number[], begin: number, end: number) => ({ dtype: 'F32', shape, data_offsets: [begin, end] });

describe('JSON nested 100k deep (was "Maximum call stack size exceeded")', () => {
  const arrays = deep('[', ']', 100_000);
  const cases: Array<[string, string]> = [
    ['the whole header', arrays],
    ['a tensor entry', `{"a":${arrays}}`],
    ['a shape', `{"a":{"dtype":"F32","shape":${arrays},"data_offsets":[0,0]}}`],
    ['__metadata__', `{"__metadata__":${arrays}}`],
    ['a metadata value', `{"__metadata__":{"k":${arrays}}}`],
    ['objects', `{"a":${deep('{"a":', '}', 100_000, '1')}}`],
  ];
  it.each(cases)('in %s: JSON_TOO_DEEP naming the file and the limit', async (label, header) => {
    const dir = await tempDir();
    const path = join(dir, `${label.replaceAll(' ', '-')}.safetensors`);
    await writeFile(path, rawFile(header));
    const err = await rejection(SafetensorsFile.open(path));
    expect(err.code).toBe('JSON_TOO_DEEP');
    expect(err.file).toBe(path);
    expect(err.message).toContain(path);
    expect(err.message).toContain(`at most ${MAX_JSON_DEPTH} deep`);
  });

  it('the limit is exact: 128 levels parse, 129 do not', () => {
    expect(scanJson(deep('[', ']', MAX_JSON_DEPTH))).toBeNull();
    expect(scanJson(deep('[', ']', MAX_JSON_DEPTH + 1))).toMatchObject({ kind: 'too-deep', depth: MAX_JSON_DEPTH + 1 });
    // Brackets inside strings (escaped quotes included) do not count.
    expect(scanJson(JSON.stringify({ k: `\\"${'['.repeat(1000)}` }))).toBeNull();
  });

  it('a deep index.json is JSON_TOO_DEEP naming the index', async () => {
    const dir = await tempDir();
    const index = join(dir, 'model.safetensors.index.json');
    await writeFile(index, `{"weight_map":${deep('[', ']', 100_000)}}`);
    const err = await rejection(Checkpoint.open(dir));
    expect(err.code).toBe('JSON_TOO_DEEP');
    expect(err.file).toBe(index);
  });
});

describe('duplicate keys (JSON.parse kept the last one silently)', () => {
  it.each([
    [
      'a tensor named twice',
      '{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
      'the top-level object',
    ],
    ['a field twice in an entry', '{"w":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}}', '"w"'],
    ['a metadata key twice', '{"__metadata__":{"format":"pt","format":"np"}}', '"__metadata__"'],
    [
      'the same name spelled with an escape',
      '{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"\\u0077":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
      'top-level',
    ],
  ])('%s: DUPLICATE_KEY', async (label, header, where) => {
    const dir = await tempDir();
    const path = join(dir, `${label.replaceAll(' ', '-')}.safetensors`);
    await writeFile(path, rawFile(header, header.includes('data_offsets') ? 4 : 0));
    const err = await rejection(SafetensorsFile.open(path));
    expect(err.code).toBe('DUPLICATE_KEY');
    expect(err.message).toContain(path);
    expect(err.message).toContain(where);
  });

  it('a weight_map entry twice in the index: DUPLICATE_KEY', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'a.safetensors'), serializeSafetensors({ w: { dtype: 'F32', shape: [1], data: new Float32Array([1]) } }));
    await writeFile(join(dir, 'model.safetensors.index.json'), '{"weight_map":{"w":"a.safetensors","w":"b.safetensors"}}');
    const err = await rejection(Checkpoint.open(dir));
    expect(err.code).toBe('DUPLICATE_KEY');
    expect(err.message).toContain('"weight_map"');
  });

  it('the same key in different objects is fine', async () => {
    const dir = await tempDir();
    const path = join(dir, 'ok.safetensors');
    await writeFile(path, rawFile({ a: f32([1], 0, 4), b: f32([1], 4, 8) }, 8));
    const f = await SafetensorsFile.open(path);
    expect(f.names()).toEqual(['a', 'b']);
    await f.close();
  });
});

describe('index files', () => {
  it('an index over 100 MB is INDEX_TOO_LARGE before it is read (a sparse file: nothing is allocated)', async () => {
    const dir = await tempDir();
    const index = join(dir, 'model.safetensors.index.json');
    await writeFile(index, '{}');
    await truncate(index, 2 ** 40); // 1 TiB, sparse
    const before = process.memoryUsage().arrayBuffers;
    const err = await rejection(Checkpoint.open(dir));
    expect(err.code).toBe('INDEX_TOO_LARGE');
    expect(err.message).toContain(`${2 ** 40} bytes`);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1 << 20);
  });

  it('one shard spelled two ways ("a" and "./a") is opened once (was DUPLICATE_TENSOR against itself)', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'sub'));
    await writeFile(
      join(dir, 'a.safetensors'),
      serializeSafetensors({
        x: { dtype: 'F32', shape: [1], data: new Float32Array([1]) },
        y: { dtype: 'F32', shape: [1], data: new Float32Array([2]) },
      }),
    );
    await writeFile(
      join(dir, 'model.safetensors.index.json'),
      JSON.stringify({ weight_map: { x: 'sub/../a.safetensors', y: './a.safetensors' } }),
    );
    const ckpt = await Checkpoint.open(dir);
    expect(ckpt.names()).toEqual(['x', 'y']);
    expect(await ckpt.readFloat32('y')).toEqual(new Float32Array([2]));
    await ckpt.close();
  });
});
