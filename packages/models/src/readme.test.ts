import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Ernie45VL } from './ernie/model.js';
import { FIXTURE_DIR } from './fixture-dir.js';
import { readNamedTensors } from './inputs-file.js';
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

  it('loadPretrained picks the model from config.json', async () => {
    const m = await loadPretrained(join(FIXTURE_DIR, 'ernie-tiny'), { device: 'cpu' });
    expect(m.modelType).toBe('ernie4_5_vl_moe');
    await m.release();
  });
});
