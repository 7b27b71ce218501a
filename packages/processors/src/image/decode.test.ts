import { describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import { fixturePath, readBytes, readJson } from '../test-utils/fixtures.js';
import { decodeImage } from './decode.js';

type DecodeIndex = Record<string, { mode: string; width: number; height: number; rgb: string }>;
const index = readJson<DecodeIndex>('image-processors', 'decode', 'index.json');

describe('decodeImage matches exif_transpose(Image.open(f)).convert("RGB") byte for byte', () => {
  it('covers every PIL mode HF meets', () => {
    const modes = new Set(Object.values(index).map((e) => e.mode));
    for (const m of ['RGB', 'RGBA', 'LA', 'L', 'P', 'I;16', '1', 'CMYK']) expect(modes).toContain(m);
  });
  it.each(Object.entries(index))('%s', async (name, e) => {
    const im = await decodeImage(fixturePath('image-processors', 'decode', name));
    const expected = readBytes('image-processors', 'decode', e.rgb);
    expect([im.width, im.height]).toEqual([e.width, e.height]);
    let differing = 0;
    for (let i = 0; i < expected.length; i++) if (im.data[i] !== expected[i]) differing++;
    expect(im.data.length).toBe(expected.length);
    expect(differing).toBe(0);
  });
});

describe('decodeImage errors', () => {
  it('names the file that is not an image', async () => {
    const err = await decodeImage(new TextEncoder().encode('hello'), { name: 'notes.txt' }).catch((e) => e);
    expect(err).toBeInstanceOf(ProcessorError);
    expect(err.code).toBe('NOT_AN_IMAGE');
    expect(err.message).toMatch(/^notes\.txt: not an image/);
  });
  it('names a file that cannot be read', async () => {
    await expect(decodeImage('/nonexistent/cat.png')).rejects.toMatchObject({
      code: 'NOT_AN_IMAGE',
      message: expect.stringMatching(/cat\.png/),
    });
  });
  it('refuses images over the pixel limit before decoding them', async () => {
    const path = fixturePath('image-processors', 'decode', 'rgb.png');
    await expect(decodeImage(path, { maxPixels: 31 * 23 - 1 })).rejects.toMatchObject({
      code: 'IMAGE_TOO_LARGE',
      message: expect.stringMatching(/rgb\.png: 31x23 is 713 pixels, more than the limit of 712/),
    });
    await expect(decodeImage(path, { maxPixels: 31 * 23 })).resolves.toMatchObject({ width: 31, height: 23 });
  });
});
