import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { ProcessorError } from '../errors.js';
import { readJson } from '../test-utils/fixtures.js';
import {
  processQwen3VLVideos,
  pythonFixed1,
  qwen3vlSampleFrameIndices,
  qwen3vlTimestamps,
  qwen3vlVideoProcessorConfig,
  qwen3vlVideoSmartResize,
} from './video.js';

const settings = readJson<{ video_processor: Record<string, unknown> }>('qwen3vl', 'processor_config.json').video_processor;
const config = qwen3vlVideoProcessorConfig(settings, { file: 'processor_config.json', key: 'video_processor' });

describe('pythonFixed1 (Python f"{x:.1f}")', () => {
  it('rounds exact binary halves to even where toFixed rounds them up', () => {
    expect([0.25, 0.75, 1.25, 2.5, 1.375, 0.05].map(pythonFixed1)).toEqual(['0.2', '0.8', '1.2', '2.5', '1.4', '0.1']);
    expect((0.25).toFixed(1)).toBe('0.3');
    expect([0, 1 / 3, 1.5, 11 / 6, 123.45].map(pythonFixed1)).toEqual(['0.0', '0.3', '1.5', '1.8', '123.5']);
  });
});

describe('qwen3vlSampleFrameIndices (HF Qwen3VLVideoProcessor.sample_frames)', () => {
  it('samples fps 2 of a 6 fps clip with np.linspace, halves to even', () => {
    expect(qwen3vlSampleFrameIndices(12, 6, config)).toEqual([0, 4, 7, 11]);
    // linspace(0, 10, 5) = [0, 2.5, 5, 7.5, 10]: 2.5 -> 2, 7.5 -> 8
    expect(qwen3vlSampleFrameIndices(11, 6, config, { fps: 3 })).toEqual([0, 2, 5, 8, 10]);
    // at least min_frames (4), at most the video's frames
    expect(qwen3vlSampleFrameIndices(12, 6, config, { fps: 0.1 })).toEqual([0, 4, 7, 11]);
    expect(qwen3vlSampleFrameIndices(3, 6, config)).toEqual([0, 1, 2]);
  });

  it('refuses num_frames beside the settings fps (HF raises) and fps sampling without a frame rate', () => {
    expect(() => qwen3vlSampleFrameIndices(12, 6, config, { numFrames: 5 })).toThrow(/set "fps": null/);
    expect(qwen3vlSampleFrameIndices(12, 6, { ...config, fps: undefined }, { numFrames: 5 })).toEqual([0, 3, 6, 8, 11]);
    expect(() => qwen3vlSampleFrameIndices(12, undefined, config)).toThrow(ProcessorError);
  });
});

describe('qwen3vlTimestamps and qwen3vlVideoSmartResize', () => {
  it('averages each temporal patch, the last index repeated to fill it', () => {
    expect(qwen3vlTimestamps([0, 3, 6, 8, 11], 6, 2)).toEqual([0.25, (1 + 8 / 6) / 2, 11 / 6]);
  });

  it('rounds the frame count to the temporal factor half to even inside the pixel budget', () => {
    // 5 frames: t_bar = round(2.5) * 2 = 4, so 4 * 64 * 64 = 16384 fits (Math.round would give 6 and shrink to 32x32)
    expect(qwen3vlVideoSmartResize(5, 48, 64, 2, 32, 2048, 16384, 'v')).toEqual([64, 64]);
    expect(qwen3vlVideoSmartResize(6, 48, 64, 2, 32, 2048, 16384, 'v')).toEqual([32, 32]);
    // sides under one factor are scaled up first
    expect(qwen3vlVideoSmartResize(2, 20, 40, 2, 32, 2048, 16384, 'v')).toEqual([32, 64]);
    expect(() => qwen3vlVideoSmartResize(1, 48, 64, 2, 32, 2048, 16384, 'v')).toThrow(/fewer than temporal_patch_size/);
  });
});

describe('processQwen3VLVideos', () => {
  it('pads an odd frame count with the last frame inside the last temporal patch', () => {
    const frame = (v: number) => ({ width: 64, height: 64, data: new Uint8Array(64 * 64 * 3).fill(v) });
    const out = processQwen3VLVideos([{ frames: [frame(0), frame(100), frame(200)], fps: 1 }], { ...config, doSampleFrames: false });
    expect(out.videoGridThw).toEqual([[2, 4, 4]]);
    expect(out.timestamps).toEqual([[0.5, 2]]);
    const dim = 3 * 2 * 16 * 16;
    expect(out.pixelValuesVideosShape).toEqual([32, dim]);
    // row 16 is temporal patch 1: frames 2 and 2 (the copy), channel 0 first then its second frame
    const row = out.pixelValuesVideos.subarray(16 * dim, 17 * dim);
    expect(row[0]).toBeCloseTo(200 / 127.5 - 1, 6);
    expect(row[256]).toBe(row[0]);
    expect(out.pixelValuesVideos[0]).toBe(-1);
    expect(out.pixelValuesVideos[256]).toBeCloseTo(100 / 127.5 - 1, 6);
  });

  it('refuses a frame size past 4096 x 4096 that a large budget would pick, before resizing', () => {
    const big = qwen3vlVideoProcessorConfig({ ...settings, size: { shortest_edge: 2 ** 27, longest_edge: 2 ** 28 } });
    const frame = { width: 64, height: 48, data: new Uint8Array(64 * 48 * 3) };
    expect(() => processQwen3VLVideos([{ frames: [frame, frame], fps: 1 }], { ...big, doSampleFrames: false })).toThrow(
      /the most vlmkit processes per frame/,
    );
    expect(() => qwen3vlVideoProcessorConfig({ ...settings, size: { shortest_edge: 1, longest_edge: 2 ** 29 } })).toThrow(ConfigError);
  });

  it('refuses a non-bicubic resample and null sizes by field', () => {
    expect(() => qwen3vlVideoProcessorConfig({ ...settings, resample: 2 })).toThrow(ConfigError);
    expect(() => qwen3vlVideoProcessorConfig({ ...settings, size: null })).toThrow(/size/);
    expect(qwen3vlVideoProcessorConfig({ ...settings, fps: null }).fps).toBeUndefined();
  });
});
