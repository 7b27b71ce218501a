import { existsSync } from 'node:fs';
import { copyFile, mkdir, readlink, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint, checkpointFiles, f32ToBf16, type Tensor, writeSafetensors } from './index.js';
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

  it('observeReads: each tensor read reported once with its file and bytes, until removed', async () => {
    const dir = await shardedModel(join(root, 'observed'));
    const ckpt = await Checkpoint.open(dir);
    const reads: unknown[] = [];
    ckpt.observeReads((r) => reads.push(r));
    await ckpt.read('a.weight');
    await ckpt.readFloat32('c.weight');
    ckpt.observeReads(undefined);
    await ckpt.read('b.weight');
    expect(reads).toEqual([
      { name: 'a.weight', file: join(dir, 'model-00001-of-00002.safetensors'), bytes: 8 },
      { name: 'c.weight', file: join(dir, 'model-00002-of-00002.safetensors'), bytes: 4 },
    ]);
    await ckpt.close();
  });

  it('opens the index file itself and a single file as given', async () => {
    const dir = await shardedModel(join(root, 'by-index-file'));
    const byIndex = await Checkpoint.open(join(dir, 'model.safetensors.index.json'));
    expect(byIndex.names()).toHaveLength(4);
    await byIndex.close();

    const single = await Checkpoint.open(join(dir, 'model-00001-of-00002.safetensors'));
    expect(single.names().sort()).toEqual(['a.weight', 'b.weight']);
    expect(single.files()).toEqual([join(dir, 'model-00001-of-00002.safetensors')]);
    await single.close();
  });

  describe("a directory's weight files are transformers' (model.safetensors, else the index's shards)", () => {
    it('model.safetensors beside other .safetensors files (a reference dump, an adapter): only it is read', async () => {
      const dir = join(root, 'plain');
      await mkdir(dir);
      await writeSafetensors(join(dir, 'model.safetensors'), { x: f32(1) });
      // Other names, and one name of the weights with other values: neither is read, nor a duplicate.
      await writeSafetensors(join(dir, 'expected.safetensors'), { logits: f32(9, 9) });
      await writeSafetensors(join(dir, 'adapter_model.safetensors'), { x: f32(-7) });
      const ckpt = await Checkpoint.open(dir);
      expect(ckpt.names()).toEqual(['x']);
      expect([...(await ckpt.readFloat32('x'))]).toEqual([1]);
      expect(ckpt.files()).toEqual([join(dir, 'model.safetensors')]);
      await ckpt.close();
      expect(await checkpointFiles(dir)).toEqual({
        index: undefined,
        files: [join(dir, 'model.safetensors')],
        unread: [join(dir, 'adapter_model.safetensors'), join(dir, 'expected.safetensors')],
      });
    });

    it('model.safetensors wins over model.safetensors.index.json, as in from_pretrained', async () => {
      const dir = await shardedModel(join(root, 'both'));
      await writeSafetensors(join(dir, 'model.safetensors'), { whole: f32(4) });
      const ckpt = await Checkpoint.open(dir);
      expect(ckpt.names()).toEqual(['whole']);
      await ckpt.close();
    });

    it('a directory named model.safetensors is no weights file: the index is read', async () => {
      const dir = await shardedModel(join(root, 'dir-named-weights'));
      await mkdir(join(dir, 'model.safetensors'));
      expect(await checkpointFiles(dir)).toEqual({
        index: join(dir, 'model.safetensors.index.json'),
        files: [join(dir, 'model-00001-of-00002.safetensors'), join(dir, 'model-00002-of-00002.safetensors')],
        unread: [join(dir, 'model.safetensors')],
      });
    });

    it("config.json's transformers_weights names the file or index to read instead, inside the directory", async () => {
      const dir = await shardedModel(join(root, 'named'));
      await writeSafetensors(join(dir, 'model.safetensors'), { whole: f32(4) });
      await mkdir(join(dir, 'weights'));
      await writeSafetensors(join(dir, 'weights', 'consolidated.safetensors'), { named: f32(5) });
      const config = (name: unknown) =>
        writeFile(join(dir, 'config.json'), JSON.stringify({ model_type: 'x', transformers_weights: name }));
      await config('weights/consolidated.safetensors');
      const ckpt = await Checkpoint.open(dir);
      expect(ckpt.names()).toEqual(['named']);
      await ckpt.close();
      await config('model.safetensors.index.json');
      expect((await checkpointFiles(dir)).files).toEqual([
        join(dir, 'model-00001-of-00002.safetensors'),
        join(dir, 'model-00002-of-00002.safetensors'),
      ]);
      for (const bad of ['pytorch_model.bin', '../outside.safetensors', '/etc/x.safetensors', 3]) {
        await config(bad);
        const err = await rejection(Checkpoint.open(dir));
        expect([err.code, err.file]).toEqual(['BAD_TRANSFORMERS_WEIGHTS', join(dir, 'config.json')]);
        expect(err.message).toMatch(/expected "transformers_weights" to name a/);
      }
      await config(null);
      expect((await checkpointFiles(dir)).files).toEqual([join(dir, 'model.safetensors')]);
    });

    it('a model.safetensors that is no regular file and no index: NOT_A_FILE naming what it is', async () => {
      const dir = join(root, 'odd-weights');
      await mkdir(join(dir, 'model.safetensors'), { recursive: true });
      const err = await rejection(Checkpoint.open(dir));
      expect([err.code, err.file]).toEqual(['NOT_A_FILE', join(dir, 'model.safetensors')]);
      expect(err.message).toContain('found a directory');
      await rm(join(dir, 'model.safetensors'), { recursive: true });
      await symlink(join(dir, 'nowhere.safetensors'), join(dir, 'model.safetensors'));
      expect((await rejection(Checkpoint.open(dir))).message).toContain('found a symbolic link to nothing');
    });

    it('other .safetensors files without model.safetensors or its index: refused, every one named', async () => {
      const dir = join(root, 'misnamed');
      await mkdir(dir);
      await writeSafetensors(join(dir, 'weights.safetensors'), { x: f32(1) });
      await writeSafetensors(join(dir, 'adapter_model.safetensors'), { y: f32(2) });
      await writeFile(join(dir, 'other.safetensors.index.json'), index({ x: 'weights.safetensors' }));
      const err = await rejection(Checkpoint.open(dir));
      expect(err.code).toBe('NO_MODEL_SAFETENSORS');
      expect(err.file).toBe(dir);
      expect(err.message).toContain(
        "expected model.safetensors or model.safetensors.index.json in this directory (the weight files transformers' from_pretrained reads), found only 'adapter_model.safetensors', 'other.safetensors.index.json', 'weights.safetensors'",
      );
      expect((await rejection(checkpointFiles(dir))).code).toBe('NO_MODEL_SAFETENSORS');
    });
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
          await writeSafetensors(join(d, 'b.safetensors'), { x: f32(2), y: f32(3) });
          await writeFile(join(d, 'model.safetensors.index.json'), index({ x: 'a.safetensors', y: 'b.safetensors' }));
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
        'NO_MODEL_SAFETENSORS',
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

/**
 * huggingface_hub's cache: `models--org--name/snapshots/<rev>/<file>` are relative symlinks to
 * `../../blobs/<hash>`. Built here for real (symlinks on disk), as `snapshot_download` leaves it.
 */
async function hubCache(cache: string, repo: string, links: Record<string, string> = {}): Promise<string> {
  const model = join(cache, `models--org--${repo}`);
  const snapshot = join(model, 'snapshots', '0123abcd');
  await mkdir(join(model, 'blobs'), { recursive: true });
  await mkdir(snapshot, { recursive: true });
  const staging = await shardedModel(join(cache, `staging-${repo}`));
  for (const [i, f] of ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json'].entries()) {
    await rename(join(staging, f), join(model, 'blobs', `blob${i}`));
    await symlink(join('..', '..', 'blobs', `blob${i}`), join(snapshot, f));
  }
  for (const [f, target] of Object.entries(links)) {
    await rm(join(snapshot, f));
    await symlink(target, join(snapshot, f));
  }
  return snapshot;
}

describe('huggingface_hub cache layout (snapshots/<rev>/ symlinks into ../../blobs/)', () => {
  let cache: string;
  beforeAll(async () => {
    cache = await tempDir();
  });

  it('opens a sharded snapshot whose files are symlinks into the blobs, and reads across shards', async () => {
    const snapshot = await hubCache(cache, 'good');
    expect((await readlink(join(snapshot, 'model-00002-of-00002.safetensors'))).startsWith(join('..', '..', 'blobs'))).toBe(true);
    const ckpt = await Checkpoint.open(snapshot);
    expect(ckpt.names().sort()).toEqual(['a.weight', 'b.weight', 'c.weight', 'd.ids']);
    expect([...(await ckpt.readFloat32('c.weight'))]).toEqual([0.5, -4]);
    await ckpt.close();
    // An absolute link that stays inside the model's cache folder is the same file.
    const abs = await hubCache(cache, 'absolute-inside', {
      'model-00001-of-00002.safetensors': join(cache, 'models--org--absolute-inside', 'blobs', 'blob0'),
    });
    const byAbs = await Checkpoint.open(abs);
    expect([...(await byAbs.read('a.weight')).data]).toEqual([1, 2]);
    await byAbs.close();
  });

  it.each([
    ['a link escaping the model folder by ..', (c: string) => join('..', '..', '..', `outside-${c.length}.safetensors`)],
    ['a link into another model of the same cache', () => join('..', '..', '..', 'models--org--good', 'blobs', 'blob0')],
    ['an absolute link elsewhere', (c: string) => join(c, `outside-${c.length}.safetensors`)],
  ])('refuses %s (SHARD_OUTSIDE_DIR naming the hub folder)', async (label, target) => {
    await writeSafetensors(join(cache, `outside-${cache.length}.safetensors`), { 'a.weight': f32(1, 2), 'b.weight': f32(3) });
    if (!existsSync(join(cache, 'models--org--good'))) await hubCache(cache, 'good');
    const repo = label.replaceAll(/[^a-z]+/g, '-');
    const snapshot = await hubCache(cache, repo, { 'model-00001-of-00002.safetensors': target(cache) });
    const err = await rejection(Checkpoint.open(snapshot));
    expect(err.code).toBe('SHARD_OUTSIDE_DIR');
    expect(err.message).toContain(`outside the hub cache folder ${await realpath(join(cache, `models--org--${repo}`))} of this snapshot`);
  });

  it('a folder named snapshots outside a models--* folder is no hub cache: links out of it are refused as before', async () => {
    const snapshot = await hubCache(cache, 'plain');
    const fake = join(cache, 'not-a-hub', 'snapshots', 'rev');
    await mkdir(join(cache, 'not-a-hub', 'blobs'), { recursive: true });
    await mkdir(fake, { recursive: true });
    for (const f of ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json']) {
      await rename(join(snapshot, f), join(fake, f));
      await copyFile(
        join(cache, 'models--org--plain', 'blobs', `blob${f.startsWith('model.') ? 2 : f.includes('00001') ? 0 : 1}`),
        join(cache, 'not-a-hub', 'blobs', f),
      );
      await rm(join(fake, f));
      await symlink(join('..', '..', 'blobs', f), join(fake, f));
    }
    const err = await rejection(Checkpoint.open(fake));
    expect(err.code).toBe('SHARD_OUTSIDE_DIR');
    expect(err.message).toMatch(/is a symlink to .*, outside it; expected a file inside the model directory/);
  });
});
