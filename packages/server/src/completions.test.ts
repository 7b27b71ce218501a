import { join } from 'node:path';
import type { PretrainedModel } from '@vlmkit/models';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataUrl, IMAGES, loadTiny, type Served, serve, soloAnswer, TINY_MODELS } from './test-utils/serve.js';

/** `vlmkit run`'s answer: its library path (one user message, the image by path, then the prompt; greedy). */
function runAnswer(model: PretrainedModel, image: string, prompt: string, maxNewTokens: number) {
  return soloAnswer(model, { image }, prompt, { maxNewTokens });
}

for (const name of TINY_MODELS) {
  describe(`POST /v1/chat/completions on ${name} with the openai client`, () => {
    let model: PretrainedModel;
    let s: Served;
    beforeAll(async () => {
      model = await loadTiny(name);
      s = await serve(model, name);
    });
    afterAll(async () => {
      await s?.close();
      await model?.release();
    });

    const image = join(IMAGES, 'photo.jpg');
    const prompt = 'Describe this image.';
    const messages = async () => [
      {
        role: 'user' as const,
        content: [
          { type: 'image_url' as const, image_url: { url: await dataUrl(image) } },
          { type: 'text' as const, text: prompt },
        ],
      },
    ];

    it('answers with the text vlmkit run gives for the same message, its usage and finish_reason', async () => {
      const expected = await runAnswer(model, image, prompt, 12);
      const r = await s.client.chat.completions.create({ model: name, messages: await messages(), max_tokens: 12, temperature: 0 });
      expect(r.object).toBe('chat.completion');
      expect(r.choices[0]!.message.content).toBe(expected.text);
      expect(r.choices[0]!.finish_reason).toBe(expected.finishReason);
      expect(r.usage).toEqual({
        prompt_tokens: expected.promptTokens,
        completion_tokens: expected.newTokens,
        total_tokens: expected.promptTokens + expected.newTokens,
      });
    });

    it('streams chunks whose content joins to the same text, then [DONE], with a usage chunk when asked', async () => {
      const expected = await runAnswer(model, image, prompt, 12);
      const stream = await s.client.chat.completions.create({
        model: name,
        messages: await messages(),
        max_completion_tokens: 12,
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks: ChatCompletionChunk[] = [];
      for await (const c of stream) chunks.push(c);
      expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
      expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0]!.id)).toBe(true);
      const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
      expect(text).toBe(expected.text);
      const finish = chunks.filter((c) => c.choices[0]?.finish_reason);
      expect(finish.map((c) => c.choices[0]!.finish_reason)).toEqual([expected.finishReason]);
      expect(chunks.at(-1)!.choices).toEqual([]);
      expect(chunks.at(-1)!.usage?.completion_tokens).toBe(expected.newTokens);
    });

    it('cuts the answer before a stop string and ends it there with finish_reason stop', async () => {
      const expected = await runAnswer(model, image, prompt, 12);
      // A stop string from the middle of the answer the model gives: the text ends right before it.
      const stop = expected.text.slice(5, 8);
      const cut = expected.text.indexOf(stop);
      for (const stream of [false, true]) {
        const body = { model: name, messages: await messages(), max_tokens: 12, stop: [stop] };
        let text = '';
        let finish: string | null | undefined;
        if (stream) {
          for await (const c of await s.client.chat.completions.create({ ...body, stream: true })) {
            text += c.choices[0]?.delta.content ?? '';
            finish ??= c.choices[0]?.finish_reason;
          }
        } else {
          const r = await s.client.chat.completions.create(body);
          text = r.choices[0]!.message.content!;
          finish = r.choices[0]!.finish_reason;
        }
        expect(text).toBe(expected.text.slice(0, cut));
        expect(finish).toBe('stop');
      }
    });

    it('samples with temperature, top_p and seed as chat() does with the same options', async () => {
      const expected = await soloAnswer(model, { image }, prompt, { maxNewTokens: 12, temperature: 0.8, topP: 0.9, seed: 7 });
      const body = { model: name, messages: await messages(), max_tokens: 12, temperature: 0.8, top_p: 0.9, seed: 7 };
      const r = await s.client.chat.completions.create(body);
      expect(r.choices[0]!.message.content).toBe(expected.text);
      // Another seed samples another answer (the greedy one is not what the seed gives back).
      const other = await s.client.chat.completions.create({ ...body, seed: 8 });
      const greedy = await runAnswer(model, image, prompt, 12);
      expect([other.choices[0]!.message.content, greedy.text]).not.toEqual([expected.text, expected.text]);
    });

    it('lists the model and says it is healthy', async () => {
      const models = await s.client.models.list();
      expect(models.data.map((m) => m.id)).toEqual([name]);
      expect((await fetch(`${s.url}/health`)).status).toBe(200);
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      expect(metrics).toMatch(/vlmkit_generated_tokens_total \d+/);
      expect(metrics).toMatch(/vlmkit_http_requests_total\{route="\/v1\/chat\/completions",status="200"\} \d+/);
      for (const name of [
        'vlmkit_time_to_first_token_seconds_bucket',
        'vlmkit_time_per_output_token_seconds_bucket',
        'vlmkit_queue_depth 0',
        'vlmkit_running_requests 0',
        'vlmkit_max_batch',
        'process_resident_memory_bytes',
      ])
        expect(metrics).toContain(name);
    });
  });
}
