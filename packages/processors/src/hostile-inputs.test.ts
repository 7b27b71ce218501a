/**
 * Hostile processor inputs, generated deterministically from the fixture images and video: files
 * that are not images, truncated or byte-flipped JPEG/PNG/MP4, images past the pixel limit, videos
 * with no frames. Through both models' processors, every case must end in a ProcessorError with a
 * code whose message names the input, or in outputs whose shapes agree with each other and whose
 * pixel values are finite (a flipped byte inside compressed data can still decode: JPEG and MP4 carry
 * no checksum), within a per-case time bound.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessorError } from './errors.js';
import { decodeVideo } from './index.js';
import { Processor, type ProcessorOutputs } from './processor.js';
import { fixturePath, readBytes } from './test-utils/fixtures.js';

const CASE_MS = 10_000;

/** mulberry32, seeded per case. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Truncations at 5 points and byte flips (1, 8, 64 bytes past the 16-byte magic) of one file. */
function mutations(name: string, bytes: Uint8Array, seed: number): Array<[string, Uint8Array]> {
  const out: Array<[string, Uint8Array]> = [];
  for (const at of [8, 0.25, 0.5, 0.75, -1]) {
    const n = at === -1 ? bytes.length - 1 : at >= 1 ? at : Math.floor(bytes.length * at);
    out.push([`${name} truncated to ${n} bytes`, bytes.slice(0, n)]);
  }
  [1, 8, 64].forEach((flips, k) => {
    const r = rng(seed * 31 + k);
    const b = new Uint8Array(bytes);
    for (let i = 0; i < flips; i++) b[16 + Math.floor(r() * (b.length - 16))] = Math.floor(r() * 256);
    out.push([`${name} with ${flips} bytes flipped`, b]);
  });
  return out;
}

/** A PNG whose header declares `w` x `h` 8-bit RGB, followed by a few bytes of (zero) pixel data and IEND. */
function pngDeclaring(w: number, h: number): Uint8Array {
  const chunk = (type: string, data: Uint8Array) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(4 + body.length + 4);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body) >>> 0, 4 + body.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const magic = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return new Uint8Array(
    Buffer.concat([magic, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.alloc(16))), chunk('IEND', Buffer.alloc(0))]),
  );
}

/** Outputs that agree with themselves: pixel rows as the grids / sizes say, every value finite. */
function checkOutputs(o: ProcessorOutputs): void {
  const S = o.input_ids.dims[1]!;
  expect(o.input_ids.dims[0]).toBe(1);
  expect(o.attention_mask.dims).toEqual([1, S]);
  for (const key of ['pixel_values', 'pixel_values_videos'] as const) {
    const t = o[key];
    if (t === undefined) continue;
    expect(t.data.length).toBe(t.dims.reduce((a, b) => a * b, 1));
    expect((t.data as Float32Array).every(Number.isFinite), `${key} finite`).toBe(true);
  }
}

type Outcome = { kind: 'error'; code: string; message: string } | { kind: 'ok' };

async function judge(run: () => Promise<ProcessorOutputs>, name: string): Promise<Outcome> {
  const t0 = performance.now();
  let outcome: Outcome;
  try {
    checkOutputs(await run());
    outcome = { kind: 'ok' };
  } catch (e) {
    if (!(e instanceof ProcessorError)) throw e;
    expect(e.message, `the message names ${name}`).toContain(name);
    outcome = { kind: 'error', code: e.code, message: e.message };
  }
  expect(performance.now() - t0).toBeLessThan(CASE_MS);
  return outcome;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vlmkit-hostile-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const IMAGES = ['photo.jpg', 'exif-rot6.jpg', 'tiny.png', 'rgba.png', 'palette.png', 'gray-alpha.png'];

describe.each(['ernie', 'granite'] as const)('%s processor: hostile images', async (model) => {
  const processor = await Processor.fromPretrained(fixturePath(model));
  const text = processor.applyChatTemplate([{ role: 'user', content: [{ type: 'image' }, { type: 'text', text: 'What is it?' }] }], {
    addGenerationPrompt: true,
  });
  const cases: Array<[string, Uint8Array | null]> = [
    ...IMAGES.flatMap((f, i) => mutations(f, readBytes('images', f), i + 1)),
    ['an empty file', new Uint8Array()],
    ['a text file', new TextEncoder().encode('not an image, just text\n')],
    [
      'random bytes',
      Uint8Array.from(
        { length: 4096 },
        (
          (r) => () =>
            Math.floor(r() * 256)
        )(rng(99)),
      ),
    ],
    ['a safetensors file', readBytes('video', 'frames.safetensors').slice(0, 4096)],
    ['a PNG header declaring 100000 x 100000', pngDeclaring(100_000, 100_000)],
    ['a PNG declaring 1000 x 1000 with 16 bytes of data', pngDeclaring(1000, 1000)],
    ['a missing file', null],
  ];
  const counts: Record<string, number> = {};
  it.each(cases)('%s: a ProcessorError naming the file, or consistent outputs', async (label, bytes) => {
    const path = join(dir, `${model}-${label.replaceAll(/[^a-z0-9.-]+/gi, '-')}`);
    if (bytes !== null) await writeFile(path, bytes);
    const outcome = await judge(() => processor.process({ text, images: [path] }), path);
    const key = outcome.kind === 'ok' ? 'ok' : outcome.code;
    counts[key] = (counts[key] ?? 0) + 1;
    if (label.startsWith('a PNG header declaring 100000'))
      expect(outcome.kind === 'error' && outcome.code, JSON.stringify(outcome)).toBe('IMAGE_TOO_LARGE');
    if (/empty|text file|random|safetensors|missing|truncated to 8 bytes/.test(label)) expect(outcome.kind).toBe('error');
  });

  it('a directory given as an image is a ProcessorError naming it', async () => {
    expect((await judge(() => processor.process({ text, images: [dir] }), dir)).kind).toBe('error');
  });

  afterAll(() => {
    console.log(`${model} hostile images: ${cases.length + 1} cases, outcomes ${JSON.stringify(counts)}`);
  });
});

describe('ERNIE processor: hostile videos', async () => {
  const processor = await Processor.fromPretrained(fixturePath('ernie'));
  const text = processor.applyChatTemplate([{ role: 'user', content: [{ type: 'video' }, { type: 'text', text: 'What happens?' }] }], {
    addGenerationPrompt: true,
  });
  const clip = readBytes('video', 'clip.mp4');
  const cases: Array<[string, Uint8Array]> = [
    ...mutations('clip.mp4', clip, 7),
    ['an empty file', new Uint8Array()],
    ['a text file', new TextEncoder().encode('not a video\n')],
    ['a JPEG image', readBytes('images', 'photo.jpg')],
  ];
  const counts: Record<string, number> = {};
  it.each(cases)('%s: a ProcessorError naming the file, or consistent outputs', async (label, bytes) => {
    const path = join(dir, `video-${label.replaceAll(/[^a-z0-9.-]+/gi, '-')}.mp4`);
    await writeFile(path, bytes);
    const outcome = await judge(() => processor.process({ text, videos: [path] }), path);
    const key = outcome.kind === 'ok' ? 'ok' : outcome.code;
    counts[key] = (counts[key] ?? 0) + 1;
    if (/empty|text file|truncated to 8 bytes/.test(label)) expect(outcome.kind).toBe('error');
  });
  afterAll(() => {
    console.log(`ernie hostile videos: ${cases.length + 2} cases, outcomes ${JSON.stringify(counts)} (+2 with no frames: INVALID_INPUT)`);
  });

  it('a video with no frames (none decoded, none selected, an empty list) is INVALID_INPUT naming it', async () => {
    const none = await decodeVideo(fixturePath('video', 'clip.mp4'), { frames: [100_000] });
    expect(none.frames).toEqual([]);
    for (const video of [
      { frames: none.frames, fps: none.fps ?? 2 },
      { frames: [], fps: 2 },
    ]) {
      const e = await processor.process({ text, videos: [video] }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ProcessorError);
      expect((e as ProcessorError).code).toBe('INVALID_INPUT');
      expect((e as ProcessorError).message).toMatch(/video 0 has no frames/);
    }
  });

  it('leaves no temporary files behind', async () => {
    expect((await readdir(dir)).every((f) => !f.startsWith('.'))).toBe(true);
  });
});
