/**
 * The browser's 16-bit PNG decoder (png16.ts), run in Node: Pillow's RGB (the decode fixtures' .rgb files)
 * for 16-bit grey, grey + alpha and RGB, and Node's decoder (sharp) on 16-bit files made here with every
 * colour type, interlaced or not, and every row filter.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { readBytes, readJson } from '../test-utils/fixtures.js';
import { decodeImage } from './decode.js';
import { decodePng16 } from './png16.js';

const index = readJson<Record<string, { width: number; height: number; rgb: string }>>('image-processors/decode/index.json');

describe('decodePng16', () => {
  it.each(['i16.png', 'la16.png', 'rgb16.png'])('%s: Pillow convert("RGB") byte for byte', async (f) => {
    const got = await decodePng16(readBytes('image-processors/decode', f), f);
    expect([got.width, got.height]).toEqual([index[f]!.width, index[f]!.height]);
    expect(Buffer.from(got.data).equals(Buffer.from(readBytes('image-processors/decode', index[f]!.rgb)))).toBe(true);
  });

  // A 37 x 29 ramp with noise (so that every filter type is chosen somewhere), 16 bits per sample.
  const ramp = (channels: number) => {
    const w = 37;
    const h = 29;
    const data = new Uint16Array(w * h * channels);
    for (let i = 0; i < data.length; i++) data[i] = ((i * 2654435761) % 65536) >>> 0;
    for (let i = 0; i < data.length; i += 7) data[i] = i % 300;
    return { data, w, h };
  };
  for (const channels of [1, 2, 3, 4]) {
    for (const progressive of [false, true]) {
      it(`${channels} channel(s), ${progressive ? 'Adam7' : 'not'} interlaced: Node's decoder`, async () => {
        const { data, w, h } = ramp(channels);
        const space = channels <= 2 ? 'grey16' : 'rgb16';
        // A Uint16Array is read as 16-bit samples.
        const png = await sharp(data, { raw: { width: w, height: h, channels: channels as 1 | 2 | 3 | 4 } })
          .toColourspace(space)
          .png({ progressive, compressionLevel: 9, adaptiveFiltering: true })
          .toBuffer();
        const bytes = new Uint8Array(png);
        expect([bytes[24], bytes[28]]).toEqual([16, progressive ? 1 : 0]); // IHDR bit depth, interlace
        expect(await decodePng16(bytes, 'ramp.png')).toEqual({ ...(await decodeImage(bytes)) });
      });
    }
  }

  it('refuses image data cut short', async () => {
    const bytes = readBytes('image-processors/decode', 'rgb16.png');
    const cut = bytes.slice(0, bytes.length - 40);
    await expect(decodePng16(cut, 'cut.png')).rejects.toMatchObject({ code: 'NOT_AN_IMAGE' });
  });
});
