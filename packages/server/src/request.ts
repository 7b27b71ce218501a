// POST /v1/chat/completions' body: the JSON schema fastify validates it with, then the translation of a valid
// body into the engine's messages and options (media read and decoded here, so a broken image is this
// request's 400 and never reaches the batch).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChatOptions, MAX_SEED } from '@vlmkit/models';
import { type ChatMessage, type ContentPart, decodeImage } from '@vlmkit/processors';
import { badRequest } from './errors.js';
import { type MediaOptions, readMedia } from './media.js';

const part = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string' } },
} as const;

/** The body's shape; fields OpenAI defines that this server does not implement are checked in `chatRequest`. */
export const CHAT_COMPLETION_SCHEMA = {
  type: 'object',
  required: ['model', 'messages'],
  additionalProperties: false,
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    messages: {
      type: 'array',
      minItems: 1,
      maxItems: 1024,
      items: {
        type: 'object',
        required: ['role'],
        properties: {
          role: { type: 'string' },
          content: { anyOf: [{ type: 'string' }, { type: 'array', maxItems: 1024, items: part }, { type: 'null' }] },
          name: { type: 'string' },
        },
      },
    },
    stream: { type: ['boolean', 'null'] },
    stream_options: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: { include_usage: { type: 'boolean' }, include_obfuscation: { type: 'boolean' } },
    },
    max_tokens: { type: ['integer', 'null'], minimum: 1 },
    max_completion_tokens: { type: ['integer', 'null'], minimum: 1 },
    temperature: { type: ['number', 'null'], minimum: 0, maximum: 2 },
    top_p: { type: ['number', 'null'], exclusiveMinimum: 0, maximum: 1 },
    seed: { type: ['integer', 'null'], minimum: 0, maximum: MAX_SEED },
    stop: {
      anyOf: [{ type: 'string', minLength: 1 }, { type: 'array', maxItems: 4, items: { type: 'string', minLength: 1 } }, { type: 'null' }],
    },
    // OpenAI's fields that are taken at their default value only (anything else is refused by name below).
    n: { type: ['integer', 'null'] },
    tools: {},
    tool_choice: {},
    functions: {},
    function_call: {},
    parallel_tool_calls: {},
    logprobs: {},
    top_logprobs: {},
    logit_bias: {},
    response_format: {},
    presence_penalty: { type: ['number', 'null'] },
    frequency_penalty: { type: ['number', 'null'] },
    audio: {},
    modalities: {},
    prediction: {},
    web_search_options: {},
    reasoning_effort: {},
    // Accepted and ignored: they describe the caller, not the answer.
    user: { type: 'string' },
    metadata: { type: ['object', 'null'] },
    store: { type: ['boolean', 'null'] },
    service_tier: { type: ['string', 'null'] },
    safety_identifier: { type: 'string' },
    prompt_cache_key: { type: 'string' },
  },
} as const;

export interface ChatCompletionBody {
  model: string;
  messages: { role: string; content?: string | ContentPart[] | null; name?: string; [k: string]: unknown }[];
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  seed?: number | null;
  stop?: string | string[] | null;
  [field: string]: unknown;
}

/** A field OpenAI defines and its value that means "not used"; any other value is refused naming the field. */
const UNSUPPORTED: Record<string, (v: unknown) => boolean> = {
  n: (v) => v === 1,
  tools: (v) => Array.isArray(v) && v.length === 0,
  tool_choice: (v) => v === 'none',
  functions: (v) => Array.isArray(v) && v.length === 0,
  function_call: (v) => v === 'none',
  parallel_tool_calls: () => false,
  logprobs: (v) => v === false,
  top_logprobs: (v) => v === 0,
  logit_bias: (v) => typeof v === 'object' && v !== null && Object.keys(v).length === 0,
  response_format: (v) => typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'text',
  presence_penalty: (v) => v === 0,
  frequency_penalty: (v) => v === 0,
  audio: () => false,
  modalities: (v) => Array.isArray(v) && v.length === 1 && v[0] === 'text',
  prediction: () => false,
  web_search_options: () => false,
  reasoning_effort: () => false,
};

export interface RequestLimits extends MediaOptions {
  /** max_tokens when the body gives none. */
  defaultMaxTokens: number;
  /** The largest max_tokens taken. */
  maxTokensLimit: number;
  /** Characters of text over all messages. */
  maxPromptChars: number;
  /** Images and videos over all messages. */
  maxMediaParts: number;
  /** Largest image in pixels, checked from its header before it is decoded. */
  maxImagePixels: number;
}

/** What the engine gets for one request; `dispose` removes the temporary files a video needed. */
export interface EngineRequest {
  messages: ChatMessage[];
  options: ChatOptions;
  stop: string[];
  stream: boolean;
  includeUsage: boolean;
  dispose(): Promise<void>;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant']);

/** Checks what the schema cannot say and reads the media; every refusal names its field. */
export async function chatRequest(body: ChatCompletionBody, limits: RequestLimits): Promise<EngineRequest> {
  for (const [field, isDefault] of Object.entries(UNSUPPORTED)) {
    const v = body[field];
    if (v !== undefined && v !== null && !isDefault(v)) {
      throw badRequest(
        field,
        'unsupported_parameter',
        `${field} is not supported by this server${field === 'n' ? ' (only n = 1)' : ''}: leave it out`,
      );
    }
  }
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? limits.defaultMaxTokens;
  if (maxTokens > limits.maxTokensLimit) {
    const field = body.max_completion_tokens != null ? 'max_completion_tokens' : 'max_tokens';
    throw badRequest(field, 'invalid_value', `${field} must be at most ${limits.maxTokensLimit}, got ${maxTokens}`);
  }
  const temperature = body.temperature ?? 0;
  const options: ChatOptions = {
    maxNewTokens: maxTokens,
    temperature,
    // top_p and seed shape sampling only; greedy decoding (temperature 0) takes the most likely token whatever they say.
    ...(temperature > 0 && body.top_p != null ? { topP: body.top_p } : {}),
    ...(temperature > 0 && body.seed != null ? { seed: body.seed } : {}),
  };
  const stop = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  const temporary: string[] = [];
  const dispose = async () => {
    await Promise.all(temporary.map((dir) => rm(dir, { recursive: true, force: true })));
  };
  try {
    const messages = await chatMessages(body.messages, limits, temporary);
    return { messages, options, stop, stream: body.stream === true, includeUsage: body.stream_options?.include_usage === true, dispose };
  } catch (e) {
    await dispose();
    throw e;
  }
}

async function chatMessages(list: ChatCompletionBody['messages'], limits: RequestLimits, temporary: string[]): Promise<ChatMessage[]> {
  let chars = 0;
  let media = 0;
  const messages: ChatMessage[] = [];
  for (const [i, m] of list.entries()) {
    const at = `messages[${i}]`;
    if (!ROLES.has(m.role)) {
      const why =
        m.role === 'tool' || m.role === 'function'
          ? 'tool messages are not supported (no tools)'
          : 'must be system, developer, user or assistant';
      throw badRequest(`${at}.role`, 'invalid_value', `${at}.role: ${why}, got ${JSON.stringify(m.role).slice(0, 40)}`);
    }
    for (const field of ['tool_calls', 'function_call', 'audio', 'refusal'])
      if (m[field] != null) throw badRequest(`${at}.${field}`, 'unsupported_parameter', `${at}.${field} is not supported by this server`);
    // OpenAI's `developer` role is the system prompt of newer models; the chat templates know `system`.
    const role = m.role === 'developer' ? 'system' : m.role;
    if (m.content == null) throw badRequest(`${at}.content`, 'invalid_value', `${at}.content is required`);
    if (typeof m.content === 'string') {
      chars += m.content.length;
      messages.push({ role, content: m.content });
    } else {
      const parts: ContentPart[] = [];
      for (const [j, p] of m.content.entries()) {
        const field = `${at}.content[${j}]`;
        if (p.type === 'text') {
          if (typeof p.text !== 'string') throw badRequest(`${field}.text`, 'invalid_type', `${field}.text must be a string`);
          chars += p.text.length;
          parts.push({ type: 'text', text: p.text });
        } else if (p.type === 'image_url' || p.type === 'video_url') {
          if (role !== 'user') throw badRequest(field, 'invalid_value', `${field}: images and videos go in user messages`);
          if (++media > limits.maxMediaParts)
            throw badRequest(field, 'too_many_media', `${field}: at most ${limits.maxMediaParts} images and videos per request`);
          const key = p.type;
          const ref = p[key] as { url?: unknown } | undefined;
          const url = typeof ref === 'string' ? ref : ref?.url;
          if (typeof url !== 'string' || url === '')
            throw badRequest(`${field}.${key}.url`, 'invalid_type', `${field}.${key}.url must be a non-empty string`);
          const param = `${field}.${key}.url`;
          if (key === 'image_url') {
            const media = await readMedia(url, param, limits);
            parts.push({ type: 'image', image: await image(media.bytes, param, limits) });
          } else {
            const media = await readMedia(url, param, limits, true);
            parts.push({ type: 'video', path: 'path' in media ? media.path : await videoFile(media.bytes, temporary) });
          }
        } else {
          throw badRequest(
            `${field}.type`,
            'unsupported_content',
            `${field}.type must be text, image_url or video_url, got ${JSON.stringify(p.type).slice(0, 40)}`,
          );
        }
      }
      messages.push({ role, content: parts });
    }
    if (chars > limits.maxPromptChars) {
      throw badRequest(`${at}.content`, 'prompt_too_long', `the messages hold over ${limits.maxPromptChars} characters of text (at ${at})`);
    }
  }
  return messages;
}

/** The image decoded here (the processor takes it decoded), so a broken one is refused by its field. */
async function image(bytes: Uint8Array, param: string, limits: RequestLimits) {
  try {
    return await decodeImage(bytes, { maxPixels: limits.maxImagePixels, maxBytes: limits.maxFileBytes });
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'IMAGE_TOO_LARGE') throw badRequest(param, 'media_too_large', `${param}: ${(e as Error).message}`);
    throw badRequest(param, 'invalid_image', `${param}: not an image this server decodes: ${(e as Error).message}`);
  }
}

/** A video's bytes to a private temporary file: the processor decodes videos from files (FFmpeg). */
async function videoFile(bytes: Uint8Array, temporary: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-serve-'));
  temporary.push(dir);
  const path = join(dir, 'video');
  await writeFile(path, bytes, { mode: 0o600 });
  return path;
}
