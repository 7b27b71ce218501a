import type { ChatMessage, ContentPart, Processor } from '@vlmkit/processors';
import { type ByteSource, SafetensorsFile } from '@vlmkit/safetensors';
import { toWire, type WireTensor } from './wire.js';

/** The processor fixture folders (test-fixtures/processors/<family>) whose cases the check runs. */
export const PROCESSOR_FAMILIES = ['ernie', 'granite', 'qwen3vl'] as const;

/** What tools/processors/make_cases.py recorded for one case (the fields the check reads). */
export interface ProcessorCaseJson {
  messages: ChatMessage[];
  apply_chat_template: {
    add_generation_prompt: boolean;
    enable_thinking?: boolean;
    add_vision_id?: boolean;
    tools?: Record<string, unknown>[];
  };
  images: string[];
  processor_kwargs?: { fps?: number };
  video_metadata?: { fps: number; total_num_frames: number };
  video_frames_used?: number;
}

/** The fixture clip's frames (test-fixtures/processors/video/frames.safetensors: uint8 [n, h, w, 3]). */
export interface DecodedFrames {
  dims: number[];
  data: Uint8Array;
}

/** The decoded clip from frames.safetensors (tensor `frames`), through any ByteSource: a file in Node, a URL in a page. */
export async function readFrames(source: ByteSource): Promise<DecodedFrames> {
  const file = await SafetensorsFile.fromSource(source);
  try {
    const t = await file.read('frames');
    if (!(t.data instanceof Uint8Array)) throw new Error(`${source.name}: frames is ${t.dtype}, not uint8`);
    return { dims: t.shape, data: t.data };
  } finally {
    await file.close();
  }
}

/** Where a case's media come from on each platform: image files' bytes by fixture path, the decoded clip. */
export interface CaseMedia {
  image(path: string): Promise<Uint8Array>;
  frames(): Promise<DecodedFrames>;
}

/**
 * One processor case, the images given as their files' bytes (each platform decodes them: sharp in Node,
 * the browser's decoder in a page) and a video as its decoded frames (the page decodes no video): every
 * output HF names, as wire tensors.
 */
export async function processorCase(processor: Processor, c: ProcessorCaseJson, media: CaseMedia): Promise<Record<string, WireTensor>> {
  const resolve = async (part: ContentPart): Promise<ContentPart> => {
    if (part.type === 'video') {
      const { dims, data } = await media.frames();
      const [n, height, width] = dims as [number, number, number];
      const size = height * width * 3;
      const count = c.video_frames_used ?? n;
      const frames = Array.from({ length: count }, (_, i) => ({ width, height, data: data.subarray(i * size, (i + 1) * size) }));
      return { type: 'video', video: { fps: c.video_metadata!.fps, frames } };
    }
    if (part.type === 'image' && typeof part.path === 'string') return { type: 'image', image: await media.image(part.path) };
    return part;
  };
  const messages: ChatMessage[] = [];
  for (const m of c.messages) {
    messages.push(typeof m.content === 'string' ? m : { ...m, content: await Promise.all(m.content.map((p) => resolve(p))) });
  }
  const { add_generation_prompt, enable_thinking, add_vision_id, tools } = c.apply_chat_template;
  const variables = Object.fromEntries(Object.entries({ enable_thinking, add_vision_id }).filter(([, v]) => v !== undefined));
  const out = await processor.processChat(messages, {
    addGenerationPrompt: add_generation_prompt,
    variables,
    ...(tools === undefined ? {} : { tools }),
    ...c.processor_kwargs,
  });
  return Object.fromEntries(Object.entries(out).flatMap(([k, t]) => (t ? [[k, toWire(t.data, t.dims)]] : [])));
}
