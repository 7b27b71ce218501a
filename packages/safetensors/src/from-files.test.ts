// One checkpoint, four ways in: Checkpoint.open(dir) and Checkpoint.fromFiles over Node's dirFiles, a real
// HTTP server on 127.0.0.1 (urlFiles, range requests) and picked files (blobFiles) must give the same names,
// the same infos and byte-identical tensors; the weight-file rule and the index checks are the same code.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { blobFiles, Checkpoint, checkpointFiles, dirFiles, type Tensor, urlFiles, writeSafetensors } from './index.js';
import { rejection, tempDir } from './test-utils/files.js';
import { serve, type TestServer } from './test-utils/http.js';

const FIXTURES = resolve(fileURLToPath(new URL('../../../test-fixtures', import.meta.url)));

/** Every file under `dir` as a File picked with `<input webkitdirectory>` (webkitRelativePath 'folder/...'). */
function pickFolder(dir: string, folder: string): File[] {
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => statSync(join(dir, f)).isFile())
    .map((f) => Object.defineProperty(new File([readFileSync(join(dir, f))], f), 'webkitRelativePath', { value: `${folder}/${f}` }));
}

/** ernie-tiny split into three shards with an index, as `save_pretrained(max_shard_size=...)` writes it, plus a stray file. */
async function shardedCopy(dir: string): Promise<void> {
  const source = await Checkpoint.open(join(FIXTURES, 'ernie-tiny'));
  const names = source.names();
  const weightMap: Record<string, string> = {};
  for (let s = 0; s < 3; s++) {
    const shard = `model-0000${s + 1}-of-00003.safetensors`;
    const tensors: Record<string, Tensor> = {};
    for (const name of names.filter((_, i) => i % 3 === s)) {
      tensors[name] = await source.read(name);
      weightMap[name] = s === 1 ? `./${shard}` : shard;
    }
    await writeSafetensors(join(dir, shard), tensors);
  }
  await source.close();
  await writeFile(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }));
  await writeFile(join(dir, 'config.json'), readFileSync(join(FIXTURES, 'ernie-tiny', 'config.json')));
  await writeSafetensors(join(dir, 'expected.safetensors'), { logits: { dtype: 'F32', shape: [1], data: new Float32Array([9]) } });
}

const bytesOf = (t: Tensor) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
const baseName = (f: string) => f.slice(f.lastIndexOf('/') + 1);

describe('Checkpoint.fromFiles = Checkpoint.open', () => {
  let fixtures: TestServer;
  let temp: TestServer;
  let sharded: string;
  beforeAll(async () => {
    fixtures = await serve(FIXTURES);
    const root = await tempDir();
    sharded = join(root, 'sharded');
    await mkdir(sharded);
    await shardedCopy(sharded);
    temp = await serve(root);
  });

  it.each([
    'ernie-tiny',
    'granite-tiny',
    'sharded',
  ])('%s: same names, infos and bytes through dirFiles, urlFiles and blobFiles', async (which) => {
    const dir = which === 'sharded' ? sharded : join(FIXTURES, which);
    const url = which === 'sharded' ? `${temp.url}sharded/` : `${fixtures.url}${which}`;
    const reference = await Checkpoint.open(dir);
    const ways = {
      dirFiles: await Checkpoint.fromFiles(dirFiles(dir)),
      urlFiles: await Checkpoint.fromFiles(urlFiles(url)),
      blobFiles: await Checkpoint.fromFiles(blobFiles(pickFolder(dir, which))),
    };
    const expectedFiles = (await checkpointFiles(dir)).files;
    expect(reference.files()).toEqual(expectedFiles);
    expect(reference.files().map(baseName)).toEqual(
      which === 'sharded'
        ? ['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors']
        : ['model.safetensors'],
    );
    expect(ways.dirFiles.files()).toEqual(expectedFiles);
    expect(ways.dirFiles.stamps()).toEqual(reference.stamps());
    expect(ways.urlFiles.files()).toEqual(expectedFiles.map((f) => `${url.replace(/\/?$/, '/')}${baseName(f)}`));
    expect(ways.blobFiles.files()).toEqual(expectedFiles.map((f) => `${which}/${baseName(f)}`));
    for (const [way, ckpt] of Object.entries(ways)) {
      expect(ckpt.names(), way).toEqual(reference.names());
      for (const name of reference.names()) {
        const { file, source, ...info } = ckpt.info(name);
        const { file: refFile, source: refSource, ...refInfo } = reference.info(name);
        expect(info, `${way} ${name}`).toEqual(refInfo);
        expect(baseName(file)).toBe(baseName(refFile));
        expect(refSource).toBeUndefined();
        expect(source === undefined, way).toBe(way === 'dirFiles'); // a local file is referenced by path
        expect(Buffer.compare(bytesOf(await ckpt.read(name)), bytesOf(await reference.read(name))), `${way} ${name}`).toBe(0);
      }
      await ckpt.close();
    }
    await reference.close();
  });

  it('over HTTP only the bytes needed are fetched: header first, then each tensor read once, nothing else', async () => {
    const path = '/ernie-tiny/model.safetensors';
    const size = statSync(join(FIXTURES, 'ernie-tiny', 'model.safetensors')).size;
    const before = fixtures.sent.get(path) ?? 0;
    const ckpt = await Checkpoint.fromFiles(urlFiles(`${fixtures.url}ernie-tiny/`));
    const opened = (fixtures.sent.get(path) ?? 0) - before;
    const first = ckpt.info(ckpt.names()[0]!);
    expect(opened).toBe(1 + first.byteOffset); // the probe byte, the length prefix and the header
    for (const name of ckpt.names()) await ckpt.read(name);
    expect((fixtures.sent.get(path) ?? 0) - before).toBe(1 + size);
    expect(ckpt.stamps()).toEqual([`etag:"v1-${size}":${size}`]);
    await ckpt.close();
  });

  it('the same rule and refusals whatever the files: other .safetensors only, nothing at all, a missing shard', async () => {
    const onlyOthers = blobFiles({ 'weights.safetensors': new Blob([]), 'adapter_model.safetensors': new Blob([]) }, 'picked');
    const others = await rejection(Checkpoint.fromFiles(onlyOthers));
    expect([others.code, others.file]).toEqual(['NO_MODEL_SAFETENSORS', 'picked']);
    expect(others.message).toContain("found only 'adapter_model.safetensors', 'weights.safetensors'");
    const nothing = await rejection(Checkpoint.fromFiles(urlFiles(`${fixtures.url}no-such-model/`)));
    expect([nothing.code, nothing.message]).toEqual([
      'NO_SAFETENSORS',
      `${fixtures.url}no-such-model/: expected model.safetensors or model.safetensors.index.json in this directory, found neither.`,
    ]);
    const index = JSON.stringify({ weight_map: { x: 'model-00001-of-00002.safetensors' } });
    const missing = await rejection(Checkpoint.fromFiles(blobFiles({ 'model.safetensors.index.json': new Blob([index]) }, 'm')));
    expect([missing.code, missing.file]).toEqual(['SHARD_MISSING', 'm/model.safetensors.index.json']);
    const outside = JSON.stringify({ weight_map: { x: '../model.safetensors' } });
    const out = await rejection(Checkpoint.fromFiles(blobFiles({ 'model.safetensors.index.json': new Blob([outside]) }, 'm')));
    expect(out.code).toBe('SHARD_OUTSIDE_DIR');
    const config = JSON.stringify({ transformers_weights: 'sub/w.safetensors' });
    const named = blobFiles({ 'config.json': new Blob([config]), 'model.safetensors': new Blob([]) }, 'n');
    const notThere = await rejection(Checkpoint.fromFiles(named));
    expect([notThere.code, notThere.file]).toEqual(['FILE_NOT_FOUND', 'n/sub/w.safetensors']);
  });

  it('a sharded checkpoint lists its unread stray file; the index spelling ./x is the same shard', async () => {
    expect((await checkpointFiles(sharded)).unread).toEqual([join(sharded, 'expected.safetensors')]);
  });
});
