// The server's life around the requests: /health before the model is loaded, the per-request deadline, videos
// for ERNIE (data URL and --media-dir path), a client that leaves while queued.
import { copyFile, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChatEngine, createEngine, FIXTURE_DIR, type PretrainedModel } from '@vlmkit/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from './server.js';
import { dataUrl, IMAGES, loadTiny, type Served, serve, soloAnswer } from './test-utils/serve.js';

const NAME = 'ernie-tiny';
const CLIP = join(FIXTURE_DIR, 'processors', 'video', 'clip.mp4');

describe('server faults and lifecycle on ernie-tiny', () => {
  let model: PretrainedModel;
  beforeAll(async () => {
    model = await loadTiny(NAME);
  });
  afterAll(async () => {
    await model?.release();
  });

  it('says 503 on /health and on chat until the engine is there, then 200', async () => {
    let ready!: (e: ChatEngine) => void;
    const engine = new Promise<ChatEngine>((r) => {
      ready = r;
    });
    const server = createServer({ engine, model: NAME, log: () => undefined });
    const url = await server.listen({ port: 0 });
    try {
      expect((await fetch(`${url}/health`)).status).toBe(503);
      const early = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: NAME, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(early.status).toBe(503);
      expect(early.headers.get('retry-after')).toBe('1');
      ready(await createEngine(model));
      await expect.poll(async () => (await fetch(`${url}/health`)).status).toBe(200);
    } finally {
      await server.close({ graceMs: 0 });
    }
  });

  it('close(): /health says closing, new requests 503, a long request past the grace period ends in 503 shutdown', async () => {
    const s = await serve(model, NAME);
    const post = () =>
      fetch(`${s.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: NAME, max_tokens: 3000, messages: [{ role: 'user', content: 'Write a long story.' }] }),
      });
    const long = post();
    await expect.poll(() => s.engine.stats().running, { timeout: 20_000 }).toBe(1);
    const closed = s.server.close({ graceMs: 200 });
    expect((await fetch(`${s.url}/health`)).status).toBe(503);
    expect((await post()).status).toBe(503);
    const r = await long;
    expect(r.status).toBe(503);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('shutdown');
    await closed;
    expect(s.engine.stats()).toMatchObject({ running: 0, queued: 0 });
  });

  describe('with a short deadline', () => {
    let s: Served;
    beforeAll(async () => {
      s = await serve(model, NAME, { deadlineMs: 300 });
    });
    afterAll(async () => {
      await s?.close();
    });
    const body = (stream: boolean) =>
      JSON.stringify({ model: NAME, stream, max_tokens: 3000, messages: [{ role: 'user', content: 'Write a long story.' }] });

    it('cancels a request past it: 504 deadline_exceeded, or an error event then [DONE] when streaming', async () => {
      const post = (stream: boolean) =>
        fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(stream) });
      const t0 = performance.now();
      const whole = await post(false);
      expect(whole.status).toBe(504);
      expect(((await whole.json()) as { error: { code: string } }).error.code).toBe('deadline_exceeded');
      const streamed = await (await post(true)).text();
      expect(streamed).toMatch(/"code":"deadline_exceeded"/);
      expect(streamed.endsWith('data: [DONE]\n\n')).toBe(true);
      // 3000 tokens take far longer than this on the tiny model: both were cut short.
      expect(performance.now() - t0).toBeLessThan(20_000);
      await expect.poll(() => s.engine.stats()).toMatchObject({ running: 0, queued: 0 });
    });
  });

  describe('videos', () => {
    let s: Served;
    let media: string;
    beforeAll(async () => {
      media = await mkdtemp(join(tmpdir(), 'vlmkit-serve-video-'));
      await copyFile(CLIP, join(media, 'clip.mp4'));
      s = await serve(model, NAME, { mediaDir: media });
    });
    afterAll(async () => {
      await s?.close();
    });

    it('takes video_url as a data URL and as a --media-dir path, answering as chat() does on the file', async () => {
      const prompt = 'Describe what happens in this video.';
      const expected = await soloAnswer(model, { video: CLIP }, prompt, { maxNewTokens: 8 });
      const video = `data:video/mp4;base64,${(await readFile(CLIP)).toString('base64')}`;
      for (const url of [video, 'clip.mp4']) {
        const r = await s.client.chat.completions.create({
          model: NAME,
          max_tokens: 8,
          // openai's types know image parts only; the server takes video_url parts the same way.
          messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url } } as never, { type: 'text', text: prompt }] }],
        });
        expect(r.choices[0]!.message.content).toBe(expected.text);
        expect(r.usage!.prompt_tokens).toBe(expected.promptTokens);
      }
    });
  });

  it('a client that leaves while its request waits frees its place: the others complete, nothing stays held', async () => {
    const s = await serve(model, NAME, { maxQueue: 64 });
    try {
      const image = await dataUrl(join(IMAGES, 'photo.jpg'));
      const body = (maxTokens: number) =>
        JSON.stringify({
          model: NAME,
          max_tokens: maxTokens,
          stream: true,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'image_url', image_url: { url: image } },
                { type: 'text', text: 'Hi' },
              ],
            },
          ],
        });
      const post = (maxTokens: number, signal?: AbortSignal) =>
        fetch(`${s.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: body(maxTokens),
          signal,
        });
      // Long requests fill the engine; the ones behind them leave before their first token.
      const busy = Array.from({ length: 20 }, () => post(64).then((r) => r.text()));
      const leaving = Array.from({ length: 8 }, () => new AbortController());
      const left = leaving.map((c) =>
        post(2000, c.signal).then(
          () => 'answered',
          () => 'left',
        ),
      );
      await new Promise((r) => setTimeout(r, 50));
      for (const c of leaving) c.abort();
      expect(await Promise.all(left)).toEqual(Array(8).fill('left'));
      for (const text of await Promise.all(busy)) expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
      await expect.poll(() => s.engine.stats(), { timeout: 20_000 }).toMatchObject({ running: 0, queued: 0 });
      // Had the leavers run, they would have made up to 2000 tokens each.
      expect(s.engine.stats().tokensGenerated).toBeLessThan(20 * 64 + 8 * 200);
    } finally {
      await s.close();
    }
  });
});
