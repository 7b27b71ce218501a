// Blob sources: a picked file, a picked folder (webkitRelativePath), a map of name -> Blob; and what
// SafetensorsFile makes of a source's refusals.
import { describe, expect, it } from 'vitest';
import { type ByteSource, blobFiles, blobSource, readTextFile, SafetensorsError, SafetensorsFile, serializeSafetensors } from './index.js';
import { rejection } from './test-utils/files.js';

const BYTES = Uint8Array.from({ length: 300 }, (_, i) => (i * 13) % 256);

/** A File as `<input webkitdirectory>` gives it. */
function picked(path: string, bytes: Uint8Array | string, lastModified = 1_700_000_000_000): File {
  const file = new File([bytes], path.slice(path.lastIndexOf('/') + 1), { lastModified });
  return Object.defineProperty(file, 'webkitRelativePath', { value: path });
}

describe('blobSource', () => {
  it('reads exact ranges; name and stamp from the File; past the end is SHORT_READ', async () => {
    const src = blobSource(new File([BYTES], 'w.safetensors', { lastModified: 42 }));
    expect([src.name, src.size, src.stamp, src.path]).toEqual(['w.safetensors', 300, 'blob:300:42', undefined]);
    expect([...(await src.read(17, 33))]).toEqual([...BYTES.subarray(17, 50)]);
    expect((await src.read(300, 0)).length).toBe(0);
    expect((await rejection(src.read(290, 11))).code).toBe('SHORT_READ');
    await src.close();
    expect([...(await src.read(0, 2))]).toEqual([0, 13]); // holds nothing open: still readable
    const plain = blobSource(new Blob([BYTES]), 'named');
    expect([plain.name, plain.stamp]).toEqual(['named', 'blob:300']);
    expect(blobSource(new Blob([])).name).toBe('blob');
  });
});

describe('blobFiles', () => {
  it('a picked folder: webkitRelativePath with the folder itself dropped, subfolders kept', async () => {
    const files = blobFiles([
      picked('ernie-tiny/config.json', '{"x":1}'),
      picked('ernie-tiny/model.safetensors', BYTES),
      picked('ernie-tiny/cases/a/input.json', '[]'),
    ]);
    expect(files.root).toBe('ernie-tiny');
    expect(await files.list?.()).toEqual(['config.json', 'model.safetensors']);
    const model = await files.open('model.safetensors');
    expect([model?.name, model?.size, model?.stamp]).toEqual(['ernie-tiny/model.safetensors', 300, 'blob:300:1700000000000']);
    expect(await readTextFile(files, './cases/a/input.json')).toBe('[]');
    expect(await files.open('tokenizer.json')).toBeUndefined();
    expect(await files.open('ernie-tiny/config.json')).toBeUndefined(); // the folder's own name is not part of a name
    for (const bad of ['../config.json', '/config.json', 'cases/../../x']) {
      expect((await rejection(files.open(bad))).code).toBe('FILE_OUTSIDE_DIR');
    }
  });

  it('files picked one by one are named by name; a map of name -> Blob by its keys; two of one name refused', async () => {
    const loose = blobFiles([new File(['{}'], 'config.json'), new File([BYTES], 'model.safetensors')]);
    expect([loose.root, await loose.list?.()]).toEqual(['picked files', ['config.json', 'model.safetensors']]);
    const map = blobFiles({ 'config.json': new Blob(['{}']), './sub/x.bin': new Blob([BYTES]) }, 'my model');
    expect(map.root).toBe('my model');
    expect((await map.open('sub/x.bin'))?.name).toBe('my model/sub/x.bin');
    const err = await rejection(() => blobFiles([picked('m/a.json', '1'), picked('m/./a.json', '2')]));
    expect([err.code, err.message]).toEqual(['DUPLICATE_FILE', "m: expected each file once, found 'a.json' twice."]);
  });
});

describe('SafetensorsFile.fromSource', () => {
  const file = serializeSafetensors({ w: { dtype: 'F32', shape: [3], data: new Float32Array([1, 2, 3]) } });
  /** A source over `file` whose tensor reads fail with `fail` (header reads succeed). */
  const failing = (fail: () => never): ByteSource => ({
    name: 'mem.safetensors',
    size: file.length,
    stamp: 'm',
    read: async (offset, length) => (offset + length < file.length ? file.slice(offset, offset + length) : fail()),
    close: async () => undefined,
  });

  it("a source's refusal names the tensor; a failed allocation is TENSOR_TOO_LARGE", async () => {
    const changed = await SafetensorsFile.fromSource(
      failing(() => {
        throw new SafetensorsError('SOURCE_CHANGED', 'mem.safetensors: expected ETag a, found b.', { file: 'mem.safetensors' });
      }),
    );
    const err = await rejection(changed.read('w'));
    expect([err.code, err.tensor, err.file]).toEqual(['SOURCE_CHANGED', 'w', 'mem.safetensors']);
    expect(err.message).toBe("mem.safetensors: tensor 'w': expected ETag a, found b.");
    const big = await SafetensorsFile.fromSource(
      failing(() => {
        throw new RangeError('Array buffer allocation failed');
      }),
    );
    const tooLarge = await rejection(big.read('w'));
    expect([tooLarge.code, tooLarge.tensor]).toEqual(['TENSOR_TOO_LARGE', 'w']);
    expect(tooLarge.message).toContain('expected to allocate 12 bytes for this tensor in one buffer, found the runtime refuses');
  });

  it('a window of a bigger buffer is copied: data.buffer holds the tensor alone; the source is in info', async () => {
    const src: ByteSource = {
      name: 'windowed',
      size: file.length,
      stamp: 's',
      read: async (offset, length) => {
        const big = new Uint8Array(length + 5);
        big.set(file.subarray(offset, offset + length), 1);
        return big.subarray(1, 1 + length);
      },
      close: async () => undefined,
    };
    const f = await SafetensorsFile.fromSource(src);
    const t = await f.read('w');
    expect([...t.data]).toEqual([1, 2, 3]);
    expect(t.data.buffer.byteLength).toBe(12);
    expect(f.info('w').source).toBe(src);
    expect(f.stamp).toBe('s');
  });
});
