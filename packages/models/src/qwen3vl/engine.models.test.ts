// The batching engine (../engine.ts) on both Qwen3-VL checkpoints: requests of different modalities decoded in
// one run per step, each row at its own cache length and M-RoPE delta, give HF's greedy ids; on the 'cuda'
// profile's graphs (contrib attention and the com.microsoft MoE, run on the CPU EP) too.
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from '../engine.js';
import type { LoadOptions } from '../model-load.js';
import { fixtureCases, readTensors } from '../test-utils/fixtures.js';
import { Qwen3VL } from './model.js';

const released: Qwen3VL[] = [];
afterAll(async () => {
  for (const m of released) await m.release();
});

const PROFILE_OPTIONS: Record<string, LoadOptions> = { cpu: {}, cuda: { profile: 'cuda' } };

describe.each(['qwen3-vl-tiny', 'qwen3-vl-moe-tiny'])('createEngine on %s', (name) => {
  it.each(Object.keys(PROFILE_OPTIONS))('profile %s: image, video and two-images together give HF generate() ids', async (profile) => {
    const cases = fixtureCases(name).filter((c) => ['image', 'video', 'two-images'].includes(c.name));
    const model = await Qwen3VL.fromPretrained(cases[0]!.checkpoint, { device: 'cpu', ...PROFILE_OPTIONS[profile] });
    released.push(model);
    const engine = await createEngine(model, { maxBatch: 4 });
    try {
      const runs = cases.map(async (c) => {
        const inputs = await readTensors(`${c.dir}/inputs.safetensors`);
        const expected = await readTensors(`${c.dir}/expected.safetensors`);
        const r = await engine.generate(inputs as never, { maxNewTokens: expected.generated_ids!.dims[1]!, eos: [] });
        return [r.tokens.flat(), Array.from(expected.generated_ids!.data as BigInt64Array, Number)];
      });
      for (const [got, want] of await Promise.all(runs)) expect(got).toEqual(want);
    } finally {
      await engine.close();
    }
  });
});
