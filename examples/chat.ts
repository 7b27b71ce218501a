// Chat with streaming: a picture and a question in, the answer printed as it is generated.
//   node examples/dist/chat.js [MODEL_DIR] [IMAGE] [QUESTION]
// The tiny fixture's weights are random, so its answer is noise; point MODEL_DIR at a real checkpoint
// (config.json, *.safetensors, tokenizer and processor files, as on the hub) for a real one.
import { loadPretrained } from '@vlmkit/models';

const dir = process.argv[2] ?? 'test-fixtures/ernie-tiny';
const image = process.argv[3] ?? 'test-fixtures/processors/images/photo.jpg';
const question = process.argv[4] ?? 'What is in the picture?';

// ERNIE-4.5-VL or Granite 4 Vision, from config.json's model_type; graphs are built once and cached.
const model = await loadPretrained(dir);
const messages = [
  {
    role: 'user',
    content: [
      { type: 'image', path: image },
      { type: 'text', text: question },
    ],
  },
];

// The directory's processor makes the inputs (chat template, image processor, tokenizer); each piece is
// new text, never half a UTF-8 character. Greedy by default; `temperature`, `topK`, `topP`, `seed` sample.
const stream = model.chat(messages, { maxNewTokens: 16 });
for await (const piece of stream) process.stdout.write(piece);

const s = await stream.summary();
console.log(
  `\n[${s.promptTokens} prompt tokens, ${s.newTokens} new (${s.finishReason}), first token after ` +
    `${s.timeToFirstTokenMs.toFixed(0)} ms, ${s.tokensPerSecond.toFixed(1)} tokens/s, ${s.device}]`,
);
await model.release();
