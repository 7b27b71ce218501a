import { expect, it } from 'vitest';
// The README's processor example, with its comments turned into assertions.
import { Processor } from './index.js';
import { fixturePath } from './test-utils/fixtures.js';

it('README processor example runs and gives the documented values', async () => {
  const processor = await Processor.fromPretrained(fixturePath('ernie'));
  expect(processor.kind).toBe('ernie4_5_vl_moe');

  const messages = [
    {
      role: 'user',
      content: [
        { type: 'image', path: fixturePath('images/photo.jpg') },
        { type: 'text', text: 'What is in the picture?' },
      ],
    },
  ];
  const prompt = processor.applyChatTemplate(messages, { addGenerationPrompt: true });
  expect(prompt).toBe(
    '<|begin_of_sentence|>User: Picture 1:<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>What is in the picture?\nAssistant: <think>\n\n</think>\n\n',
  );

  const inputs = await processor.processChat(messages, { addGenerationPrompt: true });
  expect(inputs.input_ids.dims).toEqual([1, 36]);
  const imageId = BigInt(processor.tokenizer.specialTokenId('image_token')!);
  expect(inputs.input_ids.data.filter((id) => id === imageId).length).toBe(6);
  expect(inputs.pixel_values?.dims).toEqual([24, 588]);
  expect(Array.from(inputs.image_grid_thw!.data)).toEqual([1n, 4n, 6n]);
  expect(inputs.mm_token_type_ids!.data.filter((t) => t === 1n).length).toBe(6);
  expect(inputs.moe_mm_token_type_ids!.data.filter((t) => t === 1n).length).toBe(8);

  const same = await processor.process({ text: prompt, images: [fixturePath('images/photo.jpg')] });
  expect(Array.from(same.input_ids.data)).toEqual(Array.from(inputs.input_ids.data));

  const detok = processor.tokenizer.detokenizer({ skipSpecialTokens: true });
  let answer = '';
  for (const id of await processor.tokenizer.encode('A red square.', { addSpecialTokens: false })) {
    answer += await detok.push(id);
  }
  answer += await detok.flush();
  expect(answer).toBe('A red square.');
});
