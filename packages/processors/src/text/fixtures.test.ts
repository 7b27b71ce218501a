import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixturePath, readJson } from '../test-utils/fixtures.js';
import { readSafetensors } from '../test-utils/safetensors.js';
import { type ChatMessage, ChatTemplate } from './chat-template.js';
import { Tokenizer } from './tokenizer.js';

/** What tools/processors/make_cases.py recorded from HF transformers 5.17 for one case. */
interface Case {
  messages: ChatMessage[];
  apply_chat_template: { add_generation_prompt: boolean; enable_thinking?: boolean };
  prompt: string;
  images: string[];
  video?: string;
  tokens?: string[];
  decoded?: string;
  decoded_skip_special?: string;
}

for (const model of ['ernie', 'granite']) {
  describe(`${model} fixture tokenizer and chat template vs HF`, async () => {
    const dir = fixturePath(model);
    const tokenizer = await Tokenizer.fromPretrained(dir);
    const template = new ChatTemplate(readFileSync(fixturePath(model, 'chat_template.jinja'), 'utf8'), tokenizer.specialTokens);
    const cases = readdirSync(fixturePath(model, 'cases'));

    it.each(cases)('%s: the templated prompt is the one HF rendered', (name) => {
      const c = readJson<Case>(model, 'cases', name, 'case.json');
      const { add_generation_prompt, enable_thinking } = c.apply_chat_template;
      const variables = enable_thinking === undefined ? {} : { enable_thinking };
      expect(template.apply(c.messages, { addGenerationPrompt: add_generation_prompt, variables })).toBe(c.prompt);
    });

    const textOnly = cases.filter((name) => {
      const c = readJson<Case>(model, 'cases', name, 'case.json');
      return c.images.length === 0 && c.video === undefined;
    });
    it.each(textOnly)('%s: input_ids, tokens and decode equal HF', async (name) => {
      const c = readJson<Case>(model, 'cases', name, 'case.json');
      const expected = readSafetensors(fixturePath(model, 'cases', name, 'expected.safetensors'));
      // HF processor.apply_chat_template(tokenize=True): no special tokens added when the prompt starts with bos.
      const ids = await tokenizer.encode(c.prompt);
      expect(ids).toEqual(Array.from(expected.input_ids!.data, Number));
      if (c.tokens !== undefined) expect(ids.map((id) => tokenizer.idToToken(id))).toEqual(c.tokens);
      if (c.decoded !== undefined) expect(await tokenizer.decode(ids)).toBe(c.decoded);
      if (c.decoded_skip_special !== undefined)
        expect(await tokenizer.decode(ids, { skipSpecialTokens: true })).toBe(c.decoded_skip_special);
    });

    it.each(textOnly)('%s: streamed pieces concatenate to HF decode, whole characters each', async (name) => {
      const c = readJson<Case>(model, 'cases', name, 'case.json');
      const expected = readSafetensors(fixturePath(model, 'cases', name, 'expected.safetensors'));
      const d = tokenizer.detokenizer();
      const pieces: string[] = [];
      for (const id of expected.input_ids!.data) pieces.push(await d.push(id));
      pieces.push(await d.flush());
      if (c.decoded !== undefined) expect(pieces.join('')).toBe(c.decoded);
      for (const p of pieces) expect(p).not.toContain('\uFFFD');
    });
  });
}
