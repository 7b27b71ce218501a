import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessorError } from './errors.js';
import { Processor, type ProcessorOutputs } from './processor.js';
import { fixturePath, readJson } from './test-utils/fixtures.js';
import { readSafetensors } from './test-utils/safetensors.js';
import type { ChatMessage } from './text/chat-template.js';
import type { VideoFrames } from './video/ernie.js';

/** What tools/processors/make_cases.py recorded from HF transformers 5.17 for one case. */
interface Case {
  messages: ChatMessage[];
  apply_chat_template: { add_generation_prompt: boolean; enable_thinking?: boolean };
  prompt: string;
  images: string[];
  video?: string;
  processor_kwargs?: { fps?: number };
  video_metadata?: { fps: number; total_num_frames: number };
}

/** test-fixtures/processors/video/frames.safetensors: the fixture clip's decoded frames (lossless), as VideoFrames. */
function fixtureVideo(fps: number): VideoFrames {
  const t = readSafetensors(fixturePath('video/frames.safetensors')).frames!;
  const [n, height, width] = t.shape as [number, number, number];
  const size = height * width * 3;
  const data = t.data as Uint8Array;
  return { fps, frames: Array.from({ length: n }, (_, i) => ({ width, height, data: data.subarray(i * size, (i + 1) * size) })) };
}

/** The case's messages with fixture image paths made absolute and the video given as its decoded frames. */
function resolveMedia(c: Case): ChatMessage[] {
  return c.messages.map((m) => ({
    ...m,
    content:
      typeof m.content === 'string'
        ? m.content
        : m.content.map((p) => {
            if (p.type === 'video') return { type: 'video', video: fixtureVideo(c.video_metadata!.fps) };
            return typeof p.path === 'string' ? { ...p, path: fixturePath(p.path) } : p;
          }),
  }));
}

/** Max |a - b| over two float arrays of equal length. */
function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

for (const model of ['ernie', 'granite']) {
  describe(`Processor on the ${model} fixture vs HF transformers 5.17`, async () => {
    const processor = await Processor.fromPretrained(fixturePath(model));
    const cases = readdirSync(fixturePath(model, 'cases'));

    it.each(cases)('%s: every output HF returns, ids/grids/sizes identical, pixel values within 1e-5', async (name) => {
      const c = readJson<Case>(model, 'cases', name, 'case.json');
      const expected = readSafetensors(fixturePath(model, 'cases', name, 'expected.safetensors'));
      const { add_generation_prompt, enable_thinking } = c.apply_chat_template;
      const out = await processor.processChat(resolveMedia(c), {
        addGenerationPrompt: add_generation_prompt,
        variables: enable_thinking === undefined ? {} : { enable_thinking },
        ...c.processor_kwargs,
      });
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
}

describe('Processor', async () => {
  const processor = await Processor.fromPretrained(fixturePath('ernie'));

  it('picks the model family from the directory', async () => {
    expect(processor.kind).toBe('ernie4_5_vl_moe');
    expect((await Processor.fromPretrained(fixturePath('granite'))).kind).toBe('granite4_vision');
  });

  it('process() on a prompt with a placeholder equals processChat() on the messages', async () => {
    const image = fixturePath('images/tiny.png');
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'image', path: image },
          { type: 'text', text: 'What is it?' },
        ],
      },
    ];
    const text = processor.applyChatTemplate(messages, { addGenerationPrompt: true });
    const a = await processor.process({ text, images: [image] });
    const b = await processor.processChat(messages, { addGenerationPrompt: true });
    expect(Array.from(a.input_ids.data)).toEqual(Array.from(b.input_ids.data));
    expect(a.pixel_values!.data).toEqual(b.pixel_values!.data);
  });

  it('refuses a prompt whose placeholders do not match the images', async () => {
    const text = processor.applyChatTemplate([{ role: 'user', content: [{ type: 'image' }] }], { addGenerationPrompt: true });
    await expect(processor.process({ text })).resolves.toBeDefined();
    await expect(processor.process({ text: 'no placeholder', images: [fixturePath('images/tiny.png')] })).rejects.toThrow(ProcessorError);
  });

  it('decodes ids as the tokenizer does', async () => {
    const out = await processor.process({ text: 'User: hi' });
    expect(await processor.decode(out.input_ids.data)).toBe('User: hi');
  });
});

// Where HF 5.17's processor raises and vlmkit used to return inputs (the hostile suite, tools/hostile): an
// empty chat_template.jinja is no template ("does not have a chat template"), no messages is HF's IndexError,
// an audio part makes HF load audio these models cannot take.
describe('processChat refuses what HF raises on', () => {
  it('an empty chat_template.jinja is no chat template', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'vlmkit-empty-template-')), 'ernie');
    try {
      cpSync(fixturePath('ernie'), dir, { recursive: true });
      writeFileSync(join(dir, 'chat_template.jinja'), '');
      const p = await Processor.fromPretrained(dir);
      await expect(p.processChat([{ role: 'user', content: 'Hello!' }])).rejects.toThrow(/has no chat template/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('no messages, and an audio part, are refused by name', async () => {
    const p = await Processor.fromPretrained(fixturePath('ernie'));
    await expect(p.processChat([])).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(p.processChat([])).rejects.toThrow(/at least one message/);
    const audio: ChatMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'audio', path: 'a.wav' },
          { type: 'text', text: 'hi' },
        ],
      },
    ];
    await expect(p.processChat(audio)).rejects.toThrow(/message 0, content part 0: an audio part/);
  });
});
