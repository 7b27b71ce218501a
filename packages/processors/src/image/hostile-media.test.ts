/**
 * Issue 16 findings on image and video files: GIF pixels as HF's load_image gives them, formats
 * HF cannot read the same way refused by name, and paths that are not regular files (FIFOs,
 * devices, directories) or too large refused before anything is read.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import { fixturePath, readBytes, readJson } from '../test-utils/fixtures.js';
import { decodeVideo } from '../video/decode.js';
import { ernieVideoProcessorConfig, processErnieVideos } from '../video/ernie.js';
import { DEFAULT_MAX_IMAGE_BYTES, decodeImage } from './decode.js';
import { ernieImageProcessorConfig, processErnieImages } from './ernie.js';

type Index = Record<string, { mode: string; width: number; height: number; rgb: string } | { error: string }>;
const index = readJson<Index>('hostile-images', 'index.json');
const gifs = Object.entries(index).filter(([name]) => name.endsWith('.gif'));
/** PNG / WebP files where Pillow checks what libvips lets pass (chunk CRCs, the EXIF header). */
const checked = Object.entries(index).filter(([name]) => /\.(png|webp)$/.test(name));

async function expectLoadImage(name: string, e: Index[string]): Promise<void> {
  if ('error' in e) {
    const err = await decodeImage(fixturePath('hostile-images', name)).catch((x) => x);
    expect(err).toBeInstanceOf(ProcessorError);
    expect(err.code).toBe('NOT_AN_IMAGE');
    expect(err.message).toContain(name);
    return;
  }
  const im = await decodeImage(fixturePath('hostile-images', name));
  const expected = readBytes('hostile-images', e.rgb);
  expect([im.width, im.height]).toEqual([e.width, e.height]);
  expect(im.data.length).toBe(expected.length);
  let differing = 0;
  for (let i = 0; i < expected.length; i++) if (im.data[i] !== expected[i]) differing++;
  expect(differing).toBe(0);
}

describe('GIF: decodeImage gives load_image(path).tobytes() byte for byte (finding 4)', () => {
  it.each(gifs.filter(([, e]) => !('error' in e)))('%s', expectLoadImage);
  it.each(gifs.filter(([, e]) => 'error' in e))('%s is refused, as Pillow refuses it', expectLoadImage);
  it('a transparent pixel keeps its palette colour, which is not black', async () => {
    // pillow-trns.gif: index 5 (transparent) fills rows 5..14, columns 8..29.
    const im = await decodeImage(fixturePath('hostile-images', 'pillow-trns.gif'));
    const at = (10 * im.width + 20) * 3;
    expect(Array.from(im.data.subarray(at, at + 3))).not.toEqual([0, 0, 0]);
  });
  it('refuses a GIF over the pixel limit from its header, before decoding', async () => {
    await expect(decodeImage(fixturePath('hostile-images', 'pillow-trns.gif'), { maxPixels: 40 * 30 - 1 })).rejects.toMatchObject({
      code: 'IMAGE_TOO_LARGE',
      message: expect.stringMatching(/pillow-trns\.gif: 40x30 is 1200 pixels/),
    });
  });
});

describe('PNG and WebP files Pillow refuses are refused, those it reads match', () => {
  it.each(checked)('%s', expectLoadImage);
});

describe('formats HF reads differently are refused by name (finding 7)', () => {
  it('SVG: Pillow cannot open it', async () => {
    const svg = new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>');
    const err = await decodeImage(svg, { name: 'drawing.svg' }).catch((x) => x);
    expect(err).toBeInstanceOf(ProcessorError);
    expect(err.code).toBe('UNSUPPORTED_IMAGE');
    expect(err.message).toMatch(/^drawing\.svg: an SVG drawing.*convert it to PNG/);
  });
  it('SVG of many blurred shapes is refused at once, not rendered', async () => {
    // Small enough that rendering it (the old behaviour) would end in seconds, failing the code check.
    const shapes = Array.from({ length: 50 }, (_, i) => `<rect x="${i}" y="${i}" width="100" height="100" filter="url(#b)"/>`).join('');
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><filter id="b"><feGaussianBlur stdDeviation="10"/></filter>${shapes}</svg>`;
    const t0 = performance.now();
    await expect(decodeImage(new TextEncoder().encode(svg), { name: 'blur.svg' })).rejects.toMatchObject({ code: 'UNSUPPORTED_IMAGE' });
    expect(performance.now() - t0).toBeLessThan(5000);
  });
  it('AVIF: sharp decodes it to other pixels than Pillow', async () => {
    const err = await decodeImage(fixturePath('hostile-images', 'sample.avif')).catch((x) => x);
    expect(err).toBeInstanceOf(ProcessorError);
    expect(err.code).toBe('UNSUPPORTED_IMAGE');
    expect(err.message).toMatch(/sample\.avif: an AVIF image.*convert it to PNG/);
  });
});

/**
 * Runs `p`, failing (not hanging) when it has not settled within `ms`. A decoder that opened the
 * FIFO would wait for a writer, maybe on the main thread: a separate process opens the write end
 * after `ms`, so a regression fails the test instead of hanging the run.
 */
async function refusedWithin(ms: number, fifo: string, p: Promise<unknown>): Promise<unknown> {
  const writer = spawn('sh', ['-c', `sleep ${ms / 1000}; : > "$0"`, fifo], { stdio: 'ignore' });
  writer.on('error', () => {});
  const t0 = performance.now();
  try {
    const err = await p.catch((e: unknown) => e);
    expect(performance.now() - t0, 'settled before the writer opened the FIFO').toBeLessThan(ms);
    return err;
  } finally {
    writer.kill();
  }
}

describe.skipIf(process.platform === 'win32')('only regular files of bounded size are read (finding 10)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vlmkit-special-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const refused = (p: Promise<unknown>, code: string, path: string) =>
    expect(p).rejects.toMatchObject({ code, message: expect.stringContaining(path) });

  it('a FIFO is refused at once, not waited on', async () => {
    const fifo = join(dir, 'pipe.png');
    execFileSync('mkfifo', [fifo]);
    const err = await refusedWithin(5000, fifo, decodeImage(fifo));
    expect(err).toBeInstanceOf(ProcessorError);
    expect(err).toMatchObject({
      code: 'NOT_AN_IMAGE',
      message: expect.stringMatching(/pipe\.png: is a FIFO \(named pipe\), not a regular file/),
    });
  });
  it.each(['/dev/zero', '/dev/urandom'])('%s is refused at once', async (device) => {
    const t0 = performance.now();
    await refused(decodeImage(device), 'NOT_AN_IMAGE', device);
    expect(performance.now() - t0).toBeLessThan(2000);
  });
  it('a symbolic link to /dev/zero is refused', async () => {
    const link = join(dir, 'zero.jpg');
    await symlink('/dev/zero', link);
    await expect(decodeImage(link)).rejects.toMatchObject({
      code: 'NOT_AN_IMAGE',
      message: expect.stringMatching(/zero\.jpg: is a character device/),
    });
  });
  it('a directory is refused', async () => {
    await expect(decodeImage(dir)).rejects.toMatchObject({
      code: 'NOT_AN_IMAGE',
      message: expect.stringMatching(/is a directory, not a regular file/),
    });
  });
  it('a file over the size limit is refused without being read', async () => {
    const big = join(dir, 'big.png');
    await writeFile(big, '');
    await truncate(big, DEFAULT_MAX_IMAGE_BYTES + 1); // sparse: no disk used
    await expect(decodeImage(big)).rejects.toMatchObject({
      code: 'IMAGE_TOO_LARGE',
      message: expect.stringMatching(/big\.png: the file is 268435457 bytes.*raise maxBytes/),
    });
    const small = fixturePath('hostile-images', 'pillow-trns.gif');
    await expect(decodeImage(small, { maxBytes: 100 })).rejects.toMatchObject({ code: 'IMAGE_TOO_LARGE' });
    await expect(decodeImage(small, { maxBytes: 838 })).resolves.toMatchObject({ width: 40 });
    await expect(decodeImage(readBytes('hostile-images', 'pillow-trns.gif'), { maxBytes: 837, name: 'upload' })).rejects.toMatchObject({
      code: 'IMAGE_TOO_LARGE',
      message: expect.stringMatching(/^upload: 838 bytes, over the limit of 837/),
    });
  });

  it('a video FIFO is refused at once', async () => {
    const fifo = join(dir, 'pipe.mp4');
    execFileSync('mkfifo', [fifo]);
    const err = await refusedWithin(5000, fifo, decodeVideo(fifo));
    expect(err).toBeInstanceOf(ProcessorError);
    expect(err).toMatchObject({ code: 'NOT_A_VIDEO', message: expect.stringMatching(/pipe\.mp4: is a FIFO/) });
  });
  it.each(['/dev/zero', '/dev/urandom'])('video %s is refused at once', async (device) => {
    await refused(decodeVideo(device), 'NOT_A_VIDEO', device);
  });
  it('a video over the size limit is refused without being read', async () => {
    const big = join(dir, 'big.mp4');
    await writeFile(big, '');
    await truncate(big, 5 * 1024 ** 3);
    await expect(decodeVideo(big)).rejects.toMatchObject({
      code: 'VIDEO_TOO_LARGE',
      message: expect.stringMatching(/big\.mp4: the file is/),
    });
    await expect(decodeVideo(fixturePath('video', 'clip.mp4'), { maxBytes: 1000 })).rejects.toMatchObject({ code: 'VIDEO_TOO_LARGE' });
  });
});

describe('decoded video pixels are bounded (finding 10)', () => {
  const clip = fixturePath('video', 'clip.mp4'); // 12 frames of 64x48
  it('frames over maxPixels are refused from the stream header', async () => {
    await expect(decodeVideo(clip, { maxPixels: 64 * 48 - 1 })).rejects.toMatchObject({
      code: 'VIDEO_TOO_LARGE',
      message: expect.stringMatching(/clip\.mp4: 64x48 frames are 3072 pixels, more than the limit of 3071/),
    });
    await expect(decodeVideo(clip, { maxPixels: 64 * 48 })).resolves.toMatchObject({
      frameIndices: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    });
  });
  it('keeping more than maxTotalPixels over all frames is refused', async () => {
    await expect(decodeVideo(clip, { maxTotalPixels: 3 * 64 * 48 })).rejects.toMatchObject({
      code: 'VIDEO_TOO_LARGE',
      message: expect.stringMatching(/clip\.mp4: the 4 frames kept so far are over 9216 pixels in all/),
    });
    // Sampled frames count, not decoded ones.
    await expect(decodeVideo(clip, { maxTotalPixels: 3 * 64 * 48, frames: [0, 5, 11] })).resolves.toMatchObject({
      frameIndices: [0, 5, 11],
    });
  });
});

describe('errors name the image or video at fault (unclear messages)', () => {
  let dir: string;
  let strip: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vlmkit-names-'));
    strip = join(dir, 'strip.png');
    await sharp({ create: { width: 250, height: 1, channels: 3, background: '#808080' } })
      .png()
      .toFile(strip);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));
  const thrown = (f: () => unknown): ProcessorError => {
    try {
      f();
    } catch (e) {
      if (e instanceof ProcessorError) return e;
      throw e;
    }
    throw new Error('did not throw');
  };

  it('an aspect ratio over 200 names the image file', async () => {
    const config = ernieImageProcessorConfig(readJson('ernie', 'preprocessor_config.json'));
    const image = await decodeImage(strip);
    const e2 = thrown(() => processErnieImages([image], config));
    expect(e2).toMatchObject({ code: 'INVALID_SIZE', message: expect.stringContaining(`image ${strip}: 250x1, an aspect ratio over 200`) });
  });
  it('video frames with an aspect ratio over 200 are called video frames, not an image', async () => {
    const config = ernieVideoProcessorConfig(readJson('ernie', 'video_preprocessor_config.json'));
    // 2 pixels high: frames 1 or 3 high are refused before (HF reads them channels-first).
    const frame = { width: 500, height: 2, data: new Uint8Array(500 * 2 * 3) };
    const err = thrown(() => processErnieVideos([{ name: 'clip.mp4', frames: [frame, frame], fps: 2 }], config));
    expect(err.code).toBe('INVALID_SIZE');
    expect(err.message).toContain('video clip.mp4 frames: 500x2, an aspect ratio over 200');
    expect(err.message).not.toMatch(/\bimage\b/);
  });
  it('a decoded video with no frames names its file', async () => {
    const config = ernieVideoProcessorConfig(readJson('ernie', 'video_preprocessor_config.json'));
    const clip = fixturePath('video', 'clip.mp4');
    const none = await decodeVideo(clip, { frames: [100_000] });
    const err = thrown(() => processErnieVideos([none], config));
    expect(err).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining(`video ${clip} has no frames`) });
  });
});
