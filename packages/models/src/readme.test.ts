import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Ernie45VL } from './ernie/model.js';
import { FIXTURE_DIR } from './fixture-dir.node.js';
import { readNamedTensors } from './inputs-file.node.js';
import { loadPretrained } from './registry.js';

describe('README example', () => {
  it('loads the tiny ERNIE, runs forward and streams generate', async () => {
    const dir = join(FIXTURE_DIR, 'ernie-tiny');
    const model = await Ernie45VL.fromPretrained(dir, { device: 'auto' });
    expect(model.device).toBe('cpu');
    const inputs = await readNamedTensors(join(dir, 'cases/images/inputs.safetensors'));
    const { logits, imageEmbeds, positionIds } = await model.forward(inputs as never);
    expect(logits.dims).toEqual([1, 26, 256]);
    expect(imageEmbeds!.dims).toEqual([12, 64]);
    expect(positionIds.dims).toEqual([3, 1, 26]);
    const streamed: number[][] = [];
    const { tokens, timings } = await model.generate(inputs as never, { maxNewTokens: 8, onToken: (t) => streamed.push([...t]) });
    expect(streamed).toEqual(tokens[0]!.map((t) => [t]));
    expect(timings.stepMs.length).toBeLessThanOrEqual(7);
    await model.release();
  });

  it('chat streams the answer to a picture and a question, then a summary', async () => {
    const progress: string[] = [];
    const model = await loadPretrained(join(FIXTURE_DIR, 'ernie-tiny'), {
      device: 'auto',
      onProgress: ({ stage, name, done, total, detail }) => detail === undefined && progress.push(`${done}/${total} ${stage} ${name}`),
    });
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'image', path: join(FIXTURE_DIR, 'processors/images/photo.jpg') },
          { type: 'text', text: 'Describe this image.' },
        ],
      },
    ];
    const stream = model.chat(messages, { maxNewTokens: 32 });
    let text = '';
    for await (const piece of stream) text += piece;
    const { promptTokens, newTokens, finishReason, timeToFirstTokenMs, tokensPerSecond, device } = await stream.summary();
    await model.release();
    expect(progress.at(-1)).toBe('5/5 session ernie-decoder');
    expect(text.length).toBeGreaterThan(0);
    expect(promptTokens).toBe(36);
    expect(newTokens).toBeGreaterThan(0);
    expect(['stop', 'length']).toContain(finishReason);
    expect(timeToFirstTokenMs).toBeGreaterThan(0);
    expect(tokensPerSecond).toBeGreaterThanOrEqual(0);
    expect(device).toBe('cpu');
  });

  it('loadPretrained picks the model from config.json', async () => {
    const m = await loadPretrained(join(FIXTURE_DIR, 'ernie-tiny'), { device: 'cpu' });
    expect(m.modelType).toBe('ernie4_5_vl_moe');
    await m.release();
  });
});
