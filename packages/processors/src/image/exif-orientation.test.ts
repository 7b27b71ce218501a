/**
 * The browser decoder's own EXIF orientation (exif-orientation.ts) against sharp's autoOrient (Node's
 * decoder, byte for byte Pillow's exif_transpose on these fixtures): the tag read, the EXIF block removed
 * without touching the pixels, and each of the 7 transpositions.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { readBytes } from '../test-utils/fixtures.js';
import { decodeImage } from './decode.js';
import { exifOrientation, jpegExif, orient, withoutExif } from './exif-orientation.js';
import { readImageHeader } from './image-header.js';

const files = [
  'exif2.jpg',
  'exif3.jpg',
  'exif4.jpg',
  'exif5.jpg',
  'exif6.jpg',
  'exif7.jpg',
  'exif8.jpg',
  'exif6.png',
  'exif8.webp',
  'rgb.jpg',
  'rgb.png',
  'rgb.webp',
];

describe('EXIF orientation as exif_transpose applies it', () => {
  it.each(files)('%s', async (f) => {
    const bytes = readBytes('image-processors/decode', f);
    const header = readImageHeader(bytes)!;
    const format = header.format as 'jpeg' | 'png' | 'webp';
    const exif = format === 'jpeg' ? jpegExif(bytes) : header.exif;
    const o = exifOrientation(exif);
    expect(o).toBe((await sharp(bytes).metadata()).orientation ?? 1);
    const stripped = withoutExif(bytes, format);
    expect((await sharp(stripped).metadata()).orientation).toBeUndefined();
    // The stored pixels, unturned, are the same with and without the EXIF block.
    const raw = async (b: Uint8Array) => sharp(b, { ignoreIcc: true }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const [a, s] = [await raw(bytes), await raw(stripped)];
    expect(s.data.equals(a.data)).toBe(true);
    const turned = orient({ width: s.info.width, height: s.info.height, data: new Uint8Array(s.data) }, o);
    const node = await decodeImage(bytes);
    expect([turned.width, turned.height]).toEqual([node.width, node.height]);
    expect(Buffer.from(turned.data).equals(Buffer.from(node.data))).toBe(true);
  });

  it('takes every APP1 out of a JPEG, a damaged "Exif\\0\\0" one too (Chromium reads that as EXIF, Pillow does not)', () => {
    const bytes = readBytes('image-processors/decode', 'exif2.jpg').slice();
    const at = bytes.findIndex((_, i) => bytes[i] === 0xff && bytes[i + 1] === 0xe1);
    bytes[at + 9] = 0x4a; // "Exif\0J"
    expect(jpegExif(bytes)).toBeUndefined();
    const stripped = withoutExif(bytes, 'jpeg');
    expect(stripped.findIndex((_, i) => stripped[i] === 0xff && stripped[i + 1] === 0xe1)).toBe(-1);
    expect(stripped.length).toBeLessThan(bytes.length);
  });

  it('reads 1 from a block without the tag, with a broken TIFF header, a count other than 1 or a value past 8', () => {
    expect(exifOrientation(undefined)).toBe(1);
    expect(exifOrientation(new Uint8Array([0x4d, 0x4d, 0, 0x2a, 0, 0, 0, 8, 0, 0]))).toBe(1);
    expect(exifOrientation(new Uint8Array([1, 2, 3]))).toBe(1);
    const tag = (count: number, value: number) =>
      new Uint8Array([0x49, 0x49, 0x2a, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, count, 0, 0, 0, value, 0, 0, 0]);
    expect(exifOrientation(tag(1, 6))).toBe(6);
    expect(exifOrientation(tag(2, 6))).toBe(1);
    expect(exifOrientation(tag(1, 9))).toBe(1);
    // A damaged TIFF header (a fuzzed exif4.jpg: Pillow decodes it unturned).
    const bad = tag(1, 6);
    bad[2] = 0;
    expect(exifOrientation(bad)).toBe(1);
  });
});
