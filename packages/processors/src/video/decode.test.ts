import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import { Processor, type ProcessorOutputs } from '../processor.js';
import { fixturePath, maxAbsDiff, readJson } from '../test-utils/fixtures.js';
import { readSafetensors } from '../test-utils/safetensors.js';
import type { ChatMessage } from '../text/chat-template.js';
import { decodeVideo } from './decode.js';
import { ernieSampleFrameIndices, ernieVideoProcessorConfig } from './ernie.js';

const CLIP = fixturePath('video/clip.mp4');

/** frames.safetensors: what PyAV (read_video_pyav's decode + to_ndarray('rgb24')) gave for clip.mp4. */
function pyavFrames(): { shape: number[]; data: Uint8Array } {
  const t = readSafetensors(fixturePath('video/frames.safetensors')).frames!;
  return { shape: t.shape, data: t.data as Uint8Array };
}

/** Copies the video stream's packets into a Matroska file (no re-encoding): a container without nb_frames. */
async function remuxToMatroska(src: string, dst: string): Promise<void> {
  const av = await import('node-av');
  const input = new av.FormatContext();
  const output = new av.FormatContext();
  const packet = new av.Packet();
  try {
    expect(await input.openInput(src, null, null)).toBe(0);
    expect(await input.findStreamInfo(null)).toBeGreaterThanOrEqual(0);
    const from = input.streams[0]!;
    expect(output.allocOutputContext2(null, 'matroska', dst)).toBe(0);
    const to = output.newStream(null);
    from.codecpar.copy(to.codecpar);
    to.codecpar.codecTag = 0;
    to.timeBase = from.timeBase;
    expect(await output.openOutput()).toBe(0);
    expect(await output.writeHeader(null)).toBeGreaterThanOrEqual(0);
    packet.alloc();
    while ((await input.readFrame(packet)) >= 0) {
      packet.rescaleTs(from.timeBase, to.timeBase);
      packet.streamIndex = 0;
      expect(await output.interleavedWriteFrame(packet)).toBe(0);
      packet.unref();
    }
    expect(await output.writeTrailer()).toBe(0);
  } finally {
    packet.free();
    await output.closeOutput();
    output.freeContext();
    await input.closeInput();
  }
}

describe('decodeVideo (node-av) vs PyAV', () => {
  it('decodes clip.mp4 byte for byte as PyAV, with the stream metadata HF reads', async () => {
    const want = pyavFrames();
    const [n, height, width] = want.shape as [number, number, number];
    const video = await decodeVideo(CLIP);
    expect(video.info).toEqual({ width, height, fps: 6, totalFrames: n, duration: 2, codec: 'h264' });
    expect(video.fps).toBe(6);
    expect(video.frames).toHaveLength(n);
    expect(video.frameIndices).toEqual(Array.from({ length: n }, (_, i) => i));
    const size = width * height * 3;
    video.frames.forEach((f, i) => {
      expect([f.width, f.height]).toEqual([width, height]);
      expect(Buffer.compare(Buffer.from(f.data), Buffer.from(want.data.subarray(i * size, (i + 1) * size))), `frame ${i}`).toBe(0);
    });
  });

  it('keeps only the sampled frames, as read_video_pyav with sample_indices_fn (the ERNIE video case)', async () => {
    const c = readJson<{ sampled_frame_indices: number[] }>('ernie', 'cases', 'video', 'case.json');
    const cfg = ernieVideoProcessorConfig(readJson('ernie', 'video_preprocessor_config.json'));
    const video = await decodeVideo(CLIP, { frames: (info) => ernieSampleFrameIndices(info.totalFrames, info.fps, cfg) });
    expect(video.frameIndices).toEqual(c.sampled_frame_indices);
    const want = pyavFrames();
    const size = want.shape[1]! * want.shape[2]! * 3;
    video.frames.forEach((f, k) => {
      const i = c.sampled_frame_indices[k]!;
      expect(Buffer.compare(Buffer.from(f.data), Buffer.from(want.data.subarray(i * size, (i + 1) * size))), `frame ${i}`).toBe(0);
    });
  });

  it('a container without a frame count (Matroska): the sampling function sees the decoded count', async () => {
    // PyAV reads stream.frames 0 here, so HF's sampling cannot run on such a file; decodeVideo samples
    // after decoding instead, with the frames it found.
    const mkv = join(tmpdir(), `vlmkit-clip-${process.pid}.mkv`);
    await remuxToMatroska(CLIP, mkv);
    const cfg = ernieVideoProcessorConfig(readJson('ernie', 'video_preprocessor_config.json'));
    const seen: number[] = [];
    const video = await decodeVideo(mkv, {
      frames: (info) => {
        seen.push(info.totalFrames);
        return ernieSampleFrameIndices(info.totalFrames, info.fps, cfg);
      },
    }).finally(() => rmSync(mkv, { force: true }));
    expect(video.info).toMatchObject({ totalFrames: 0, fps: 6, duration: 0 });
    expect(seen).toEqual([12]);
    const fromMp4 = await decodeVideo(CLIP, { frames: (info) => ernieSampleFrameIndices(info.totalFrames, info.fps, cfg) });
    expect(video.frameIndices).toEqual(fromMp4.frameIndices);
    video.frames.forEach((f, k) => {
      expect(Buffer.compare(Buffer.from(f.data), Buffer.from(fromMp4.frames[k]!.data)), `frame ${video.frameIndices[k]}`).toBe(0);
    });
  });

  it('a list of indices keeps each listed frame once, in decode order, and stops after the last', async () => {
    const video = await decodeVideo(CLIP, { frames: [5, 2, 2, 99] });
    expect(video.frameIndices).toEqual([2, 5]);
    expect((await decodeVideo(CLIP, { frames: [] })).frames).toEqual([]);
  });

  it('refuses what is not a video with NOT_A_VIDEO naming the file', async () => {
    const bogus = join(tmpdir(), `vlmkit-not-a-video-${process.pid}.mp4`);
    writeFileSync(bogus, 'not a video');
    await expect(decodeVideo(bogus)).rejects.toMatchObject({ code: 'NOT_A_VIDEO', message: expect.stringContaining(bogus) });
    rmSync(bogus);
    const missing = join(tmpdir(), 'vlmkit-no-such-video.mp4');
    await expect(decodeVideo(missing)).rejects.toBeInstanceOf(ProcessorError);
  });
});

describe('Processor with video files vs HF transformers 5.17', async () => {
  const processor = await Processor.fromPretrained(fixturePath('ernie'));

  /** The ERNIE cases with a video, their media given as the fixture's file paths (the video as clip.mp4). */
  it.each(['video', 'image-and-video'])('%s: every output identical, pixel values within 1e-5', async (name) => {
    const c = readJson<{ messages: ChatMessage[]; processor_kwargs: { fps?: number } }>('ernie', 'cases', name, 'case.json');
    const messages = c.messages.map((m) => ({
      ...m,
      content:
        typeof m.content === 'string'
          ? m.content
          : m.content.map((p) => (typeof p.path === 'string' ? { ...p, path: fixturePath(p.path) } : p)),
    }));
    expect(messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content)).some((p) => p.path === CLIP)).toBe(true);
    const out = await processor.processChat(messages, { addGenerationPrompt: true, ...c.processor_kwargs });
    const expected = readSafetensors(fixturePath('ernie', 'cases', name, 'expected.safetensors'));
    expect(Object.keys(out).sort()).toEqual(Object.keys(expected).sort());
    for (const [key, want] of Object.entries(expected)) {
      const got = out[key as keyof ProcessorOutputs]!;
      expect(got.dims, key).toEqual(want.shape);
      if (want.dtype === 'int64') expect(Array.from(got.data as BigInt64Array), key).toEqual(Array.from(want.data as BigInt64Array));
      else expect(maxAbsDiff(got.data as Float32Array, want.data as Float32Array), key).toBeLessThanOrEqual(1e-5);
    }
  });

  it('process({ videos: [path] }) equals process({ videos: [decoded frames] })', async () => {
    const text = processor.applyChatTemplate([{ role: 'user', content: [{ type: 'video' }, { type: 'text', text: 'What happens?' }] }], {
      addGenerationPrompt: true,
    });
    const frames = await decodeVideo(CLIP);
    for (const videoSampling of [{}, { fps: 1.5 }, { numFrames: 4 }]) {
      const a = await processor.process({ text, videos: [CLIP], videoSampling });
      const b = await processor.process({ text, videos: [frames], videoSampling });
      expect(a.video_grid_thw!.data, JSON.stringify(videoSampling)).toEqual(b.video_grid_thw!.data);
      expect(a.pixel_values_videos!.data).toEqual(b.pixel_values_videos!.data);
      expect(a.input_ids.data).toEqual(b.input_ids.data);
    }
    // Two videos, a file and frames: rows of each in order.
    const two = processor.applyChatTemplate(
      [{ role: 'user', content: [{ type: 'video' }, { type: 'video' }, { type: 'text', text: 'Compare.' }] }],
      { addGenerationPrompt: true },
    );
    const mixed = await processor.process({ text: two, videos: [CLIP, frames] });
    const framesOnly = await processor.process({ text: two, videos: [frames, frames] });
    expect(mixed.pixel_values_videos!.data).toEqual(framesOnly.pixel_values_videos!.data);
    expect(mixed.video_grid_thw!.data).toEqual(framesOnly.video_grid_thw!.data);
  });
});
