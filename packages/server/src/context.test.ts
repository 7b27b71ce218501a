// A request at the model's context (ernie-tiny: max_position_embeddings 4096) through the openai client: a prompt
// that fits answers until the context's end with finish_reason 'length' (streaming or not), whatever max_tokens
// asked; one that does not fit is a 400 naming `messages`; the server goes on serving.
import { type ChatEngine, createEngine, type PretrainedModel } from '@vlmkit/models';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type VlmServer } from './server.js';
import { loadTiny } from './test-utils/serve.js';

const NAME = 'ernie-tiny';
const MAX = 4096;

describe('a request at the model context (ernie-tiny, max_position_embeddings 4096)', () => {
  let model: PretrainedModel;
  let engine: ChatEngine;
  let server: VlmServer;
  let client: OpenAI;
  let close: () => Promise<void>;
  beforeAll(async () => {
    model = await loadTiny(NAME);
    engine = await createEngine(model);
    // eos off (the random fixture may end an answer early on it): each answer runs to its limit.
    server = createServer({ engine: { ...engine, chat: (m, o) => engine.chat(m, { ...o, eos: [] }) }, model: NAME, log: () => undefined });
    const url = await server.listen({ port: 0 });
    client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
    close = () => server.close({ graceMs: 0 });
  });
  afterAll(async () => {
    await close?.();
    await model?.release();
  });

  /** `n` words; their prompt's length is found by the server's own usage. */
  const ask = (n: number) => [{ role: 'user' as const, content: 'word '.repeat(n) }];

  it("answers up to the context's end with finish_reason 'length', streaming and not", async () => {
    const count = async (n: number) =>
      (await client.chat.completions.create({ model: NAME, messages: ask(n), max_tokens: 1 })).usage!.prompt_tokens;
    const [a, b] = [await count(100), await count(200)];
    const words = 100 + Math.floor(((MAX - 8 - a) * 100) / (b - a));
    const r = await client.chat.completions.create({ model: NAME, messages: ask(words), max_tokens: 100 });
    const seq = r.usage!.prompt_tokens;
    expect(seq).toBeGreaterThan(MAX - 40);
    expect(seq).toBeLessThanOrEqual(MAX);
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage!.completion_tokens).toBe(MAX - seq + 1);

    const stream = await client.chat.completions.create({
      model: NAME,
      messages: ask(words),
      max_completion_tokens: 8192,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
      usage = c.usage ?? usage;
    }
    expect(finish).toBe('length');
    expect(usage).toMatchObject({ prompt_tokens: seq, completion_tokens: MAX - seq + 1 });
    expect(text).toBe(r.choices[0]!.message.content);
  });

  it('refuses a prompt past the context with a 400 naming messages, and serves the next request', async () => {
    const refused = await client.chat.completions.create({ model: NAME, messages: ask(6000), max_tokens: 4 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect(refused).toMatchObject({ status: 400, param: 'messages', code: 'prompt_too_long' });
    const ok = await client.chat.completions.create({ model: NAME, messages: ask(3), max_tokens: 4 });
    expect(ok.choices[0]!.finish_reason).toBe('length');
    expect(ok.usage!.completion_tokens).toBe(4);
    expect(engine.stats()).toMatchObject({ running: 0, queued: 0 });
  });
});
