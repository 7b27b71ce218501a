import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Processor, type ProcessorOutputs } from '../processor.js';
import { fixturePath, maxAbsDiff, readJson } from '../test-utils/fixtures.js';
import { readSafetensors } from '../test-utils/safetensors.js';
import type { ChatMessage } from '../text/chat-template.js';
import type { VideoFrames } from '../video/ernie.js';
import { QWEN3_VL_MOE_PROCESSOR, QWEN3_VL_PROCESSOR } from './family.js';
import { qwen2vlImageProcessorConfig } from './image.js';
import { qwen3vlVideoProcessorConfig } from './video.js';

/** What tools/processors/make_qwen3vl_cases.py recorded from HF transformers 5.17 for one case. */
interface Case {
  messages: ChatMessage[];
  apply_chat_template: { add_generation_prompt: boolean; add_vision_id?: boolean; tools?: Record<string, unknown>[] };
  prompt: string;
  expanded_prompt: string;
  video_frames_used?: number;
  video_metadata?: { fps: number; total_num_frames: number };
  processor_kwargs?: { fps?: number };
}

/** The fixture clip's first `count` decoded frames (lossless), at the frame rate the case declared. */
function fixtureVideo(count: number, fps: number): VideoFrames {
  const t = readSafetensors(fixturePath('video/frames.safetensors')).frames!;
  const [, height, width] = t.shape as [number, number, number];
  const size = height * width * 3;
  const data = t.data as Uint8Array;
  return { fps, frames: Array.from({ length: count }, (_, i) => ({ width, height, data: data.subarray(i * size, (i + 1) * size) })) };
}

function resolveMedia(c: Case): ChatMessage[] {
  return c.messages.map((m) => ({
    ...m,
    content:
      typeof m.content === 'string'
        ? m.content
        : m.content.map((p) => {
            if (p.type === 'video') return { type: 'video', video: fixtureVideo(c.video_frames_used!, c.video_metadata!.fps) };
            return typeof p.path === 'string' ? { ...p, path: fixturePath(p.path) } : p;
          }),
  }));
}

describe('Qwen3-VL processor on the qwen3vl fixture vs HF transformers 5.17', async () => {
  const processor = await Processor.fromPretrained(fixturePath('qwen3vl'));
  const cases = readdirSync(fixturePath('qwen3vl', 'cases'));

  it('is chosen by processor_class for the folder', () => {
    expect(processor.family).toBe(QWEN3_VL_PROCESSOR);
    expect(cases.length).toBeGreaterThanOrEqual(14);
  });

  it.each(cases)('%s: every output HF returns, ids/grids identical, pixel values within 1e-5', async (name) => {
    const c = readJson<Case>('qwen3vl', 'cases', name, 'case.json');
    const expected = readSafetensors(fixturePath('qwen3vl', 'cases', name, 'expected.safetensors'));
    const { add_generation_prompt, add_vision_id, tools } = c.apply_chat_template;
    const messages = resolveMedia(c);
    const options = {
      addGenerationPrompt: add_generation_prompt,
      variables: add_vision_id === undefined ? {} : { add_vision_id },
      ...(tools === undefined ? {} : { tools }),
    };
    expect(processor.applyChatTemplate(messages, options)).toBe(c.prompt);
    const out = await processor.processChat(messages, { ...options, ...c.processor_kwargs });
    expect(await processor.decode(out.input_ids.data)).toBe(c.expanded_prompt);
    expect(Object.keys(out).sort()).toEqual(Object.keys(expected).sort());
    for (const [key, want] of Object.entries(expected)) {
      const got = out[key as keyof ProcessorOutputs]!;
      expect(got.dtype, key).toBe(want.dtype);
      expect(got.dims, key).toEqual(want.shape);
      if (want.dtype === 'int64') expect(Array.from(got.data as BigInt64Array), key).toEqual(Array.from(want.data as BigInt64Array));
      else expect(maxAbsDiff(got.data as Float32Array, want.data as Float32Array), key).toBeLessThanOrEqual(1e-5);
    }
  });
});

describe('Qwen3-VL processor with the video file (node-av) vs HF', async () => {
  const processor = await Processor.fromPretrained(fixturePath('qwen3vl'));

  // The cases over the whole 6 fps clip, the video given as clip.mp4: sampled indices chosen from the container's
  // frame count and rate, only those frames decoded, and the timestamps from those indices.
  it.each(['video', 'image-and-video'])('%s: ids identical, pixel values within 1e-5', async (name) => {
    const c = readJson<Case>('qwen3vl', 'cases', name, 'case.json');
    const messages = c.messages.map((m) => ({
      ...m,
      content:
        typeof m.content === 'string'
          ? m.content
          : m.content.map((p) => (typeof p.path === 'string' ? { ...p, path: fixturePath(p.path) } : p)),
    }));
    const out = await processor.processChat(messages, { addGenerationPrompt: true });
    const expected = readSafetensors(fixturePath('qwen3vl', 'cases', name, 'expected.safetensors'));
    expect(Object.keys(out).sort()).toEqual(Object.keys(expected).sort());
    for (const [key, want] of Object.entries(expected)) {
      const got = out[key as keyof ProcessorOutputs]!;
      expect(got.dims, key).toEqual(want.shape);
      if (want.dtype === 'int64') expect(Array.from(got.data as BigInt64Array), key).toEqual(Array.from(want.data as BigInt64Array));
      else expect(maxAbsDiff(got.data as Float32Array, want.data as Float32Array), key).toBeLessThanOrEqual(1e-5);
    }
  });
});

describe('Qwen3-VL processor on the tiny checkpoints', () => {
  it("picks the MoE family by config.json's model_type, the dense one otherwise", async () => {
    const dense = await Processor.fromPretrained(fixturePath('../qwen3-vl-tiny'));
    const moe = await Processor.fromPretrained(fixturePath('../qwen3-vl-moe-tiny'));
    expect(dense.kind).toBe('qwen3_vl');
    expect(moe.kind).toBe('qwen3_vl_moe');
    expect(moe.family).toBe(QWEN3_VL_MOE_PROCESSOR);
  });
});

describe('Qwen3-VL processor files as the hub has them', () => {
  it('reads preprocessor_config.json and video_preprocessor_config.json as the nested settings', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vlmkit-qwen3vl-hub-'));
    try {
      const saved = readJson<{ image_processor: object; video_processor: object }>('qwen3vl', 'processor_config.json');
      for (const f of ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja']) cpSync(fixturePath('qwen3vl', f), join(dir, f));
      const common = { processor_class: 'Qwen3VLProcessor' };
      writeFileSync(
        join(dir, 'preprocessor_config.json'),
        JSON.stringify({ ...saved.image_processor, ...common, image_processor_type: 'Qwen2VLImageProcessorFast' }),
      );
      writeFileSync(
        join(dir, 'video_preprocessor_config.json'),
        JSON.stringify({ ...saved.video_processor, ...common, video_processor_type: 'Qwen3VLVideoProcessor' }),
      );
      const hub = await Processor.fromPretrained(dir);
      const nested = await Processor.fromPretrained(fixturePath('qwen3vl'));
      expect(hub.family).toBe(QWEN3_VL_PROCESSOR);
      for (const name of ['image-and-video', 'video-fps2.5-odd']) {
        const c = readJson<Case>('qwen3vl', 'cases', name, 'case.json');
        const options = { addGenerationPrompt: true, ...c.processor_kwargs };
        const [a, b] = await Promise.all([hub.processChat(resolveMedia(c), options), nested.processChat(resolveMedia(c), options)]);
        expect(a).toEqual(b);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("takes the published checkpoints' budgets (video size bounds all frames together)", () => {
    const half = { image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5], patch_size: 16, temporal_patch_size: 2, merge_size: 2 };
    expect(qwen2vlImageProcessorConfig({ ...half, size: { longest_edge: 16777216, shortest_edge: 65536 } }).maxPixels).toBe(16777216);
    const video = qwen3vlVideoProcessorConfig({ ...half, size: { longest_edge: 25165824, shortest_edge: 4096 } });
    expect([video.maxPixels, video.fps, video.minFrames, video.maxFrames]).toEqual([25165824, 2, 4, 768]);
    expect(qwen2vlImageProcessorConfig({ ...half, min_pixels: 1024, max_pixels: 4096 })).toMatchObject({
      minPixels: 1024,
      maxPixels: 4096,
    });
  });
});
