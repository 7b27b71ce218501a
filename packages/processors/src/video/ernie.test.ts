import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import { readJson } from '../test-utils/fixtures.js';
import { ernieSampleFrameIndices, ernieVideoProcessorConfig, processErnieVideos } from './ernie.js';

const config = ernieVideoProcessorConfig(readJson('ernie', 'video_preprocessor_config.json'));

describe('ernieSampleFrameIndices (HF Ernie4_5_VLMoeVideoProcessor.sample_frames)', () => {
  it('takes all frames up to max_frames, spread by torch.arange', () => {
    // The fixture case `video`: 12 frames, max_frames 8 (case.json sampled_frame_indices).
    expect(ernieSampleFrameIndices(12, 6, config)).toEqual([0, 1, 3, 4, 6, 7, 9, 10]);
  });

  it('samples by fps when asked, from the video frame rate (case image-and-video: fps 1.5)', () => {
    expect(ernieSampleFrameIndices(12, 6, config, { fps: 1.5 })).toEqual([0, 4, 8]);
    expect(ernieSampleFrameIndices(12, 6, config, { numFrames: 4 })).toEqual([0, 3, 6, 9]);
  });

  it('refuses what HF refuses', () => {
    expect(() => ernieSampleFrameIndices(12, undefined, config, { fps: 1 })).toThrow(ProcessorError);
    expect(() => ernieSampleFrameIndices(12, 6, config, { numFrames: 9 })).toThrow(/2 <= x <= 8/);
    expect(() => ernieSampleFrameIndices(12, 6, config, { numFrames: 4, fps: 1 })).toThrow(/not both/);
  });
});

describe('ernieVideoProcessorConfig', () => {
  it('refuses draw_on_frames (HF default true) with a field-named ConfigError', () => {
    const raw = readJson<Record<string, unknown>>('ernie', 'video_preprocessor_config.json');
    expect(() => ernieVideoProcessorConfig({ ...raw, draw_on_frames: true })).toThrow(ConfigError);
    const { draw_on_frames: _, ...rest } = raw;
    expect(() => ernieVideoProcessorConfig(rest)).toThrow(/draw_on_frames/);
  });
});

describe('processErnieVideos', () => {
  it('pads an odd frame count with the last frame and counts frames in grid t', () => {
    const frame = (v: number) => ({ width: 56, height: 56, data: new Uint8Array(56 * 56 * 3).fill(v) });
    const out = processErnieVideos([{ frames: [frame(0), frame(100), frame(200)], fps: 1 }], config, { numFrames: 3 });
    expect(out.videoGridThw).toEqual([[4, 4, 4]]);
    expect(out.pixelValuesVideosShape).toEqual([64, 588]);
    // Frames 3 and 4 (rows 32..63) are the same frame.
    expect(out.pixelValuesVideos.subarray(32 * 588, 48 * 588)).toEqual(out.pixelValuesVideos.subarray(48 * 588, 64 * 588));
    expect(out.pixelValuesVideos[0]).not.toBe(out.pixelValuesVideos[16 * 588]);
  });
});

describe('frames HF reads channels-first', () => {
  it('frames 1 or 3 pixels high are refused by name (HF infers the channel axis from the shape)', () => {
    for (const height of [1, 3]) {
      const frame = { width: 8, height, data: new Uint8Array(8 * height * 3) };
      expect(() => processErnieVideos([{ frames: [frame, frame], fps: 2, name: 'clip.safetensors' }], config)).toThrow(
        new RegExp(`video clip.safetensors: 8x${height} frames; HF's video processor reads frames`),
      );
    }
  });
});
