import { readdirSync } from 'node:fs';
import type { ProcessChatOptions } from '../processor.js';
import type { ChatMessage } from '../text/chat-template.js';
import type { VideoFrames } from '../video/ernie.js';
import { fixturePath, readJson } from './fixtures.js';
import { type FixtureTensor, readSafetensors } from './safetensors.js';

/** What tools/processors/make_cases.py (make_qwen3vl_cases.py) recorded from HF transformers 5.17 for one case. */
interface Case {
  messages: ChatMessage[];
  apply_chat_template: {
    add_generation_prompt: boolean;
    enable_thinking?: boolean;
    add_vision_id?: boolean;
    tools?: Record<string, unknown>[];
  };
  prompt: string;
  video_frames_used?: number;
  video_metadata?: { fps: number; total_num_frames: number };
  processor_kwargs?: { fps?: number };
}

/** The fixture clip's first `count` decoded frames (lossless; all when undefined) at the case's frame rate. */
function fixtureVideo(count: number | undefined, fps: number): VideoFrames {
  const t = readSafetensors(fixturePath('video/frames.safetensors')).frames!;
  const [n, height, width] = t.shape as [number, number, number];
  const size = height * width * 3;
  const data = t.data as Uint8Array;
  return { fps, frames: Array.from({ length: count ?? n }, (_, i) => ({ width, height, data: data.subarray(i * size, (i + 1) * size) })) };
}

export interface ProcessorCase {
  name: string;
  messages: ChatMessage[];
  options: ProcessChatOptions;
  prompt: string;
  expected: Record<string, FixtureTensor>;
}

/** Every processor case of a fixture folder (ernie, granite, qwen3vl): media resolved, options as HF was called. */
export function processorCases(model: string): ProcessorCase[] {
  return readdirSync(fixturePath(model, 'cases')).map((name) => {
    const c = readJson<Case>(model, 'cases', name, 'case.json');
    const messages = c.messages.map((m) => ({
      ...m,
      content:
        typeof m.content === 'string'
          ? m.content
          : m.content.map((p) => {
              if (p.type === 'video') return { type: 'video', video: fixtureVideo(c.video_frames_used, c.video_metadata!.fps) };
              return typeof p.path === 'string' ? { ...p, path: fixturePath(p.path) } : p;
            }),
    }));
    const { add_generation_prompt, enable_thinking, add_vision_id, tools } = c.apply_chat_template;
    const variables: Record<string, unknown> = {};
    if (enable_thinking !== undefined) variables.enable_thinking = enable_thinking;
    if (add_vision_id !== undefined) variables.add_vision_id = add_vision_id;
    const options: ProcessChatOptions = {
      addGenerationPrompt: add_generation_prompt,
      variables,
      ...(tools === undefined ? {} : { tools }),
      ...c.processor_kwargs,
    };
    const expected = readSafetensors(fixturePath(model, 'cases', name, 'expected.safetensors'));
    return { name, messages, options, prompt: c.prompt, expected };
  });
}
