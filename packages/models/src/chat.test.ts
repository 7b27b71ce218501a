import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_DIR } from './fixture-dir.node.js';
import { readNamedTensors } from './inputs-file.node.js';
import type { LoadProgress } from './progress.js';
import { loadPretrained, type PretrainedModel } from './registry.js';
import { caseMessages, PROCESSORS } from './test-utils/fixtures.js';

async function collect(stream: AsyncIterable<string>): Promise<string[]> {
  const pieces: string[] = [];
  for await (const piece of stream) pieces.push(piece);
  return pieces;
}

for (const [checkpoint, family] of [
  ['ernie-tiny', 'ernie'],
  ['granite-tiny', 'granite'],
] as const) {
  describe(`chat on ${checkpoint} (random weights: the answer is noise)`, () => {
    let model: PretrainedModel;
    const progress: LoadProgress[] = [];
    beforeAll(async () => {
      model = await loadPretrained(join(FIXTURE_DIR, checkpoint), { device: 'cpu', onProgress: (p) => progress.push({ ...p }) });
    });
    afterAll(async () => {
      await model.release();
    });

    it('reports each load step as it starts and ends', () => {
      // The steps; reports within a step (`detail`) come only when a graph is built (progress.test.ts).
      const steps = progress.filter((p) => p.detail === undefined);
      expect(steps.map((p) => `${p.stage}:${p.name}:${p.done}/${p.total}`)).toEqual([
        'weights:checkpoint:0/5',
        'weights:checkpoint:1/5',
        `build:${family}-vision:1/5`,
        `build:${family}-vision:2/5`,
        `session:${family}-vision:2/5`,
        `session:${family}-vision:3/5`,
        `build:${family}-decoder:3/5`,
        `build:${family}-decoder:4/5`,
        `session:${family}-decoder:4/5`,
        `session:${family}-decoder:5/5`,
      ]);
    });

    // ERNIE's video case: clip.mp4 decoded by the processor (node-av), frames sampled from its metadata.
    for (const name of ['image-photo', 'two-images', 'text-only', ...(family === 'ernie' ? ['video'] : [])]) {
      it(`streams the ids generate() gives on the processor's tensors, as text (${name})`, async () => {
        const stream = model.chat(caseMessages(family, name), { maxNewTokens: 8 });
        const pieces = await collect(stream);
        const summary = await stream.summary();
        // HF's processor outputs for the same messages (test-fixtures/processors), through generate().
        const inputs = await readNamedTensors(join(PROCESSORS, family, 'cases', name, 'expected.safetensors'));
        const want = await model.generate(inputs, { maxNewTokens: 8 });
        expect(summary.tokens).toEqual(want.tokens[0]);
        expect(summary.tokens.length).toBeGreaterThan(0);
        const processor = await model.processor();
        const text = await processor.decode(summary.tokens, { skipSpecialTokens: true });
        expect(pieces.join('')).toBe(text);
        expect(summary.text).toBe(text);
        expect(summary.promptTokens).toBe(inputs.input_ids!.dims[1]);
        expect(summary.newTokens).toBe(summary.tokens.length);
        expect(summary.finishReason).toBe(summary.tokens.at(-1) === 2 ? 'stop' : 'length');
        expect(summary.device).toBe('cpu');
        expect(summary.timeToFirstTokenMs).toBeGreaterThan(0);
        expect(summary.timeToFirstTokenMs).toBeLessThanOrEqual(summary.totalMs);
        expect(summary.tokensPerSecond).toBeGreaterThanOrEqual(0);
      });
    }

    it('stops when the signal fires, and when the loop breaks: generation runs at most one token ahead of the reader', async () => {
      const messages = caseMessages(family, 'text-only');
      const full = await model.chat(messages, { maxNewTokens: 16, eos: [] }).summary();
      expect(full.tokens).toHaveLength(16);
      expect(full.finishReason).toBe('length');
      // Which token gives the first non-empty piece (special tokens give none).
      const processor = await model.processor();
      let first = 0;
      while (first < 16 && (await processor.decode(full.tokens.slice(0, first + 1), { skipSpecialTokens: true })) === '') first++;
      expect(first).toBeLessThan(8);

      const controller = new AbortController();
      const stream = model.chat(messages, { maxNewTokens: 16, eos: [], signal: controller.signal });
      for await (const _ of stream) controller.abort();
      const aborted = await stream.summary();
      expect(aborted.finishReason).toBe('aborted');
      // Read token `first`, one more queued, the step in flight finishes: at most first + 3 tokens.
      expect(aborted.tokens.length).toBeLessThanOrEqual(first + 3);
      expect(aborted.tokens).toEqual(full.tokens.slice(0, aborted.tokens.length));

      const broken = model.chat(messages, { maxNewTokens: 16, eos: [] });
      for await (const _ of broken) break;
      const early = await broken.summary();
      expect(early.finishReason).toBe('aborted');
      expect(early.tokens.length).toBeLessThanOrEqual(first + 3);

      const before = new AbortController();
      before.abort();
      const none = await model.chat(messages, { maxNewTokens: 16, signal: before.signal }).summary();
      expect([none.tokens, none.text, none.finishReason]).toEqual([[], '', 'aborted']);
    });
  });
}
