// A real server on 127.0.0.1 (port 0) over a tiny fixture model, and what the tests send it.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type ChatEngine,
  type ChatOptions,
  type ChatSummary,
  createEngine,
  type EngineOptions,
  FIXTURE_DIR,
  loadPretrained,
  type PretrainedModel,
} from '@vlmkit/models';
import OpenAI from 'openai';
import { createServer, type ServerOptions, type VlmServer } from '../server.js';

export const IMAGES = join(FIXTURE_DIR, 'processors', 'images');
export const TINY_MODELS = ['ernie-tiny', 'granite-tiny'] as const;

export interface Served {
  url: string;
  server: VlmServer;
  engine: ChatEngine;
  client: OpenAI;
  close(): Promise<void>;
}

/** A server for `model` (loaded by the caller, released by it), listening on 127.0.0.1 at a free port. */
export async function serve(
  model: PretrainedModel,
  name: string,
  options: Partial<ServerOptions> = {},
  engineOptions: EngineOptions = {},
): Promise<Served> {
  const engine = await createEngine(model, engineOptions);
  const server = createServer({ engine, model: name, log: () => undefined, ...options });
  const url = await server.listen({ port: 0 });
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: options.apiKey ?? 'none', maxRetries: 0, timeout: 60_000 });
  return { url, server, engine, client, close: () => server.close({ graceMs: 0 }) };
}

export async function loadTiny(name: string): Promise<PretrainedModel> {
  return loadPretrained(join(FIXTURE_DIR, name), { device: 'cpu' });
}

/** An image file as the data URL OpenAI clients send. */
export async function dataUrl(path: string): Promise<string> {
  const type = path.endsWith('.png') ? 'image/png' : 'image/jpeg';
  return `data:${type};base64,${(await readFile(path)).toString('base64')}`;
}

/**
 * A request alone, as `vlmkit run` answers it: one user message holding the media file (by path), then the prompt,
 * through the model's own chat() (greedy unless `options` sample).
 */
export function soloAnswer(
  model: PretrainedModel,
  media: { image: string } | { video: string },
  prompt: string,
  options: Omit<ChatOptions, 'signal'>,
): Promise<ChatSummary> {
  const part = 'image' in media ? { type: 'image', path: media.image } : { type: 'video', path: media.video };
  return model.chat([{ role: 'user', content: [part, { type: 'text', text: prompt }] }], options).summary();
}
