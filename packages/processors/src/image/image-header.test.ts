/**
 * What the browser decoder relies on, checked in Node against sharp on the decode fixtures: the header
 * reader (format, size, PNG depth and colour type, CMYK, the stored EXIF block), and that RGBA pixels as
 * a browser gives them (here sharp's RGBA decode of the same file) become Node's RGB exactly.
 */
import { readdirSync } from 'node:fs';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { fixturePath, readBytes } from '../test-utils/fixtures.js';
import { decodeImage } from './decode.js';
import { readImageHeader, rgbaToRgb } from './image-header.js';

const files = [
  ...readdirSync(fixturePath('image-processors/decode'))
    .filter((f) => /\.(png|jpg|webp|gif|tif)$/.test(f))
    .map((f) => `image-processors/decode/${f}`),
  ...readdirSync(fixturePath('images'))
    .filter((f) => /\.(png|jpg|webp|gif)$/.test(f))
    .map((f) => `images/${f}`),
];

describe('readImageHeader agrees with sharp', () => {
  it.each(files)('%s', async (f) => {
    const bytes = readBytes(f);
    const meta = await sharp(bytes).metadata();
    const h = readImageHeader(bytes)!;
    expect(h.format).toBe(meta.format);
    if (h.format === 'tiff') return;
    expect([h.width, h.height]).toEqual([meta.width, meta.height]);
    if (h.format === 'png') expect(h.png!.depth === 16).toBe(meta.depth === 'ushort');
    if (h.format === 'jpeg') expect(h.jpegComponents === 4).toBe(meta.space === 'cmyk');
    if (h.format === 'png' || h.format === 'webp') expect(h.exif).toEqual(meta.exif === undefined ? undefined : new Uint8Array(meta.exif));
  });

  it('is undefined for bytes that are no image or are cut short', () => {
    expect(readImageHeader(new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeUndefined();
    expect(readImageHeader(readBytes('image-processors/decode/rgb.png').subarray(0, 20))).toBeUndefined();
    expect(readImageHeader(readBytes('image-processors/decode/rgb.jpg').subarray(0, 40))).toBeUndefined();
  });
});

// The layouts the browser itself decodes (16-bit PNG and GIF are decoded in JS there, CMYK JPEG and TIFF refused).
const browserDecoded = files.filter((f) => {
  const h = readImageHeader(readBytes(f));
  return h !== undefined && h.format !== 'gif' && h.format !== 'tiff' && h.png?.depth !== 16 && h.jpegComponents !== 4;
});

describe("RGBA as a browser decodes it (premultiplyAlpha 'none') -> RGB as Node's decoder gives it", () => {
  it.each(browserDecoded)('%s', async (f) => {
    const bytes = readBytes(f);
    const { data, info } = await sharp(bytes, { ignoreIcc: true })
      .autoOrient()
      .toColourspace('srgb')
      .ensureAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(4);
    const rgb = rgbaToRgb({ width: info.width, height: info.height, data: new Uint8Array(data) });
    const node = await decodeImage(bytes);
    expect([rgb.width, rgb.height]).toEqual([node.width, node.height]);
    expect(Buffer.from(rgb.data).equals(Buffer.from(node.data))).toBe(true);
  });

  it('covers alpha, grey, grey+alpha, palette, EXIF rotation, JPEG and WebP', () => {
    for (const f of ['rgba.png', 'l.png', 'la.png', 'p-trns.png', 'exif6.jpg', 'rgb.webp'])
      expect(browserDecoded).toContain(`image-processors/decode/${f}`);
  });

  it('decodeImage takes ImageData (RGBA) pixels, with the pixel limit', async () => {
    const data = new Uint8ClampedArray([1, 2, 3, 0, 4, 5, 6, 255]);
    const rgb = await decodeImage({ width: 2, height: 1, data }, { name: 'canvas' });
    expect(rgb).toEqual({ name: 'canvas', width: 2, height: 1, data: new Uint8Array([1, 2, 3, 4, 5, 6]) });
    await expect(decodeImage({ width: 2, height: 1, data }, { maxPixels: 1 })).rejects.toMatchObject({ code: 'IMAGE_TOO_LARGE' });
    await expect(decodeImage({ width: 3, height: 1, data })).rejects.toMatchObject({ code: 'NOT_AN_IMAGE' });
  });

  it('decodeImage takes a Blob as its bytes', async () => {
    const bytes = readBytes('image-processors/decode/rgba.png');
    const fromBlob = await decodeImage(new Blob([bytes]), { name: 'rgba.png' });
    expect(fromBlob).toEqual(await decodeImage(bytes, { name: 'rgba.png' }));
    await expect(decodeImage(new Blob([bytes]), { maxBytes: 10 })).rejects.toMatchObject({ code: 'IMAGE_TOO_LARGE' });
  });
});
