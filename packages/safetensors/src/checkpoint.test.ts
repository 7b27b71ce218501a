import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint, f32ToBf16, f32ToF16, type Tensor, writeSafetensors } from './index.js';
import { rejection, tempDir } from './test-utils/files.js';

const f32 = (...v: number[]): Tensor => ({ dtype: 'F32', shape: [v.length], data: new Float32Array(v) });
const index = (weightMap: unknown) => JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap });

/** A sharded model dir: two shards and an index, like `save_pretrained(max_shard_size=...)`. */
async function shardedModel(dir: string, weightMap?: Record<string, string>): Promise<string> {
  await mkdir(dir, { recursive: true });
  await writeSafetensors(join(dir, 'model-00001-of-00002.safetensors'), { 'a.weight': f32(1, 2), 'b.weight': f32(3) });
  await writeSafetensors(join(dir, 'model-00002-of-00002.safetensors'), {
    'c.weight': { dtype: 'BF16', shape: [2], data: f32ToBf16(new Float32Array([0.5, -4])) },
    'd.ids': { dtype: 'I64', shape: [1], data: new BigInt64Array([5n]) },
  });
  const map = weightMap ?? {
    'a.weight': 'model-00001-of-00002.safetensors',
    'b.weight': 'model-00001-of-00002.safetensors',
    'c.weight': 'model-00002-of-00002.safetensors',
    'd.ids': 'model-00002-of-00002.safetensors',
  };
  await writeFile(join(dir, 'model.safetensors.index.json'), index(map));
  return dir;
}

describe('Checkpoint', () => {
  let root: string;
  beforeAll(async () => {
    root = await tempDir();
  });

  it('opens a sharded directory through its index and reads across shards', async () => {
    const dir = await shardedModel(join(root, 'sharded'));
    const ckpt = await Checkpoint.open(dir);
    expect(ckpt.names().sort()).toEqual(['a.weight', 'b.weight', 'c.weight', 'd.ids']);
    expect(ckpt.info('c.weight').file).toBe(join(dir, 'model-00002-of-00002.safetensors'));
    expect([...(await ckpt.read('a.weight')).data]).toEqual([1, 2]);
    expect([...(await ckpt.readFloat32('c.weight'))]).toEqual([0.5, -4]);
    expect([...(await ckpt.read('d.ids')).data]).toEqual([5n]);
    expect((await rejection(ckpt.readFloat32('d.ids'))).code).toBe('UNSUPPORTED_CONVERSION');
    const missing = await rejection(ckpt.read('c.weights'));
    expect(missing.code).toBe('TENSOR_NOT_FOUND');
    expect(missing.message).toContain(dir);
    expect(missing.message).toContain("'c.weight'");
    await ckpt.close();
  });

  it('opens the index file itself, a single file, and a directory of files without an index', async () => {
    const dir = await shardedModel(join(root, 'by-index-file'));
    const byIndex = await Checkpoint.open(join(dir, 'model.safetensors.index.json'));
    expect(byIndex.names()).toHaveLength(4);
    await byIndex.close();

    const single = await Checkpoint.open(join(dir, 'model-00001-of-00002.safetensors'));
    expect(single.names().sort()).toEqual(['a.weight', 'b.weight']);
    await single.close();

    const plain = join(root, 'plain');
    await mkdir(plain);
    await writeSafetensors(join(plain, 'model.safetensors'), { x: f32(1) });
    await writeSafetensors(join(plain, 'extra.safetensors'), { y: { dtype: 'F16', shape: [1], data: f32ToF16(new Float32Array([2])) } });
    const ckpt = await Checkpoint.open(plain);
    expect(ckpt.names().sort()).toEqual(['x', 'y']);
    expect([...(await ckpt.readFloat32('y'))]).toEqual([2]);
    await ckpt.close();
  });

  it('ignores files the index does not name (a consolidated copy beside the shards)', async () => {
    const dir = await shardedModel(join(root, 'with-consolidated'));
    await writeSafetensors(join(dir, 'consolidated.safetensors'), { 'a.weight': f32(1, 2) });
    const ckpt = await Checkpoint.open(dir);
    expect(ckpt.names()).toHaveLength(4);
    await ckpt.close();
  });

  describe('rejects bad checkpoints', () => {
    const cases: Array<[string, string, (dir: string) => Promise<unknown>]> = [
      ['index not JSON', 'INDEX_NOT_JSON', (d) => writeFile(join(d, 'model.safetensors.index.json'), '{weight_map:')],
      ['weight_map missing', 'INDEX_BAD_WEIGHT_MAP', (d) => writeFile(join(d, 'model.safetensors.index.json'), '{"metadata":{}}')],
      ['weight_map an array', 'INDEX_BAD_WEIGHT_MAP', (d) => writeFile(join(d, 'model.safetensors.index.json'), index(['x']))],
      ['weight_map value not a string', 'INDEX_BAD_WEIGHT_MAP', (d) => writeFile(join(d, 'model.safetensors.index.json'), index({ x: 1 }))],
      ['shard ../x', 'SHARD_OUTSIDE_DIR', (d) => writeFile(join(d, 'model.safetensors.index.json'), index({ x: '../x.safetensors' }))],
      [
        'shard sub/../../x',
        'SHARD_OUTSIDE_DIR',
        (d) => writeFile(join(d, 'model.safetensors.index.json'), index({ x: 'sub/../../x.safetensors' })),
      ],
      [
        'shard an absolute path',
        'SHARD_OUTSIDE_DIR',
        (d) => writeFile(join(d, 'model.safetensors.index.json'), index({ x: join(d, 'x.safetensors') })),
      ],
      [
        'shard a symlink escaping the dir',
        'SHARD_OUTSIDE_DIR',
        async (d) => {
          await writeSafetensors(join(d, '..', `outside-${d.length}.safetensors`), { x: f32(1) });
          await symlink(join(d, '..', `outside-${d.length}.safetensors`), join(d, 'link.safetensors'));
          await writeFile(join(d, 'model.safetensors.index.json'), index({ x: 'link.safetensors' }));
        },
      ],
      [
        'shard missing',
        'SHARD_MISSING',
        (d) => writeFile(join(d, 'model.safetensors.index.json'), index({ x: 'model-00001-of-00009.safetensors' })),
      ],
      [
        'tensor in two shards',
        'DUPLICATE_TENSOR',
        async (d) => {
          await writeSafetensors(join(d, 'a.safetensors'), { x: f32(1) });
          await writeSafetensors(join(d, 'b.safetensors'), { x: f32(2) });
        },
      ],
      [
        'index names the wrong shard',
        'INDEX_MISMATCH',
        (d) =>
          shardedModel(d, {
            'a.weight': 'model-00002-of-00002.safetensors',
            'c.weight': 'model-00002-of-00002.safetensors',
          }),
      ],
      ['no weights at all', 'NO_SAFETENSORS', (d) => writeFile(join(d, 'config.json'), '{}')],
      [
        'two indexes, none the default',
        'INDEX_AMBIGUOUS',
        async (d) => {
          await writeFile(join(d, 'a.safetensors.index.json'), index({}));
          await writeFile(join(d, 'b.safetensors.index.json'), index({}));
        },
      ],
      [
        'a bad shard',
        'TRAILING_BYTES',
        async (d) => {
          await writeFile(join(d, 'model.safetensors'), Buffer.from([2, 0, 0, 0, 0, 0, 0, 0, 0x7b, 0x7d, 0]));
        },
      ],
    ];
    it.each(cases)('%s -> %s', async (label, code, make) => {
      const dir = join(root, label.replaceAll(/[^a-z0-9]+/gi, '-'));
      await mkdir(dir);
      await make(dir);
      const err = await rejection(Checkpoint.open(dir));
      expect(err.code).toBe(code);
      expect(err.message).toMatch(/expected/i);
      expect(err.file?.startsWith(dir)).toBe(true);
      expect(err.message).toContain(err.file);
    });

    it('a missing path -> FILE_NOT_FOUND', async () => {
      expect((await rejection(Checkpoint.open(join(root, 'nope')))).code).toBe('FILE_NOT_FOUND');
    });
  });
});
