import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSession } from './session.js';
import { float32 } from './tensor.js';
import { externalWeightModel } from './test-utils/onnx-models.js';

const tmp = mkdtempSync(join(tmpdir(), 'vlmkit-extdata-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// w = [[1, 2], [3, 4], [5, 6]] as float32 bytes, after `offset` junk bytes.
function weightFile(offset: number): Uint8Array {
  const w = Float32Array.from([1, 2, 3, 4, 5, 6]);
  const bytes = new Uint8Array(offset + w.byteLength).fill(0xab, 0, offset);
  bytes.set(new Uint8Array(w.buffer), offset);
  return bytes;
}

const x = float32([1, 0, 0, 0, 1, 1], [2, 3]);
const expected = [1, 2, 8, 10]; // [1,0,0]·w, [0,1,1]·w

describe('external data', () => {
  it('loads from buffers when the model is a buffer', async () => {
    const s = await createSession(externalWeightModel('weights.bin', 0), {
      device: 'cpu',
      externalData: [{ path: 'weights.bin', data: weightFile(0) }],
    });
    const out = await s.run({ x });
    expect(Array.from(out.y!.data as Float32Array)).toEqual(expected);
    await s.release();
  });

  it('loads from a file next to the model, at an unaligned offset', async () => {
    const dir = join(tmp, 'model');
    mkdirSync(dir);
    writeFileSync(join(dir, 'model.onnx'), externalWeightModel('model.onnx.data', 13));
    writeFileSync(join(dir, 'model.onnx.data'), weightFile(13));
    const s = await createSession(join(dir, 'model.onnx'), { device: 'cpu' });
    expect(s.name).toBe('model.onnx');
    const out = await s.run({ x });
    expect(Array.from(out.y!.data as Float32Array)).toEqual(expected);
    await s.release();
  });

  it('fails to load, naming the session, when the external data is missing', async () => {
    await expect(createSession(externalWeightModel('absent.bin', 0), { device: 'cpu', name: 'no-weights' })).rejects.toThrow(
      /^Session 'no-weights' could not be loaded/,
    );
  });

  it('ORT refuses external data that escapes the model directory (symlink)', async () => {
    const dir = join(tmp, 'escape');
    mkdirSync(dir);
    writeFileSync(join(tmp, 'outside.bin'), weightFile(0));
    symlinkSync(join(tmp, 'outside.bin'), join(dir, 'w.bin'));
    writeFileSync(join(dir, 'model.onnx'), externalWeightModel('w.bin', 0));
    await expect(createSession(join(dir, 'model.onnx'), { device: 'cpu' })).rejects.toMatchObject({
      code: 'ORT_LOAD_FAILED',
      message: expect.stringMatching(/escapes model directory/) as unknown as string,
    });
  });
});
