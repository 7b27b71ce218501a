// visionSession 'per-call' against 'resident' on the HF fixtures: same ids and logits, the vision session held
// only while it encodes, a bad mode and a released model refused.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Ernie45VL } from './ernie/model.js';
import { ModelError } from './errors.js';
import { FIXTURE_DIR } from './fixture-dir.node.js';
import { Granite4Vision } from './granite/model.js';
import { readTensors } from './test-utils/fixtures.js';
import type { VisionSession, VisionSessionMode } from './vision-session.js';

type Loaded = Ernie45VL | Granite4Vision;
const fixtures = [
  { name: 'ernie-tiny images', Model: Ernie45VL, checkpoint: 'ernie-tiny', inputs: 'ernie-tiny/cases/images/inputs.safetensors' },
  {
    name: 'granite-tiny anyres',
    Model: Granite4Vision,
    checkpoint: 'granite-tiny',
    inputs: 'granite-tiny/cases/anyres/inputs.safetensors',
  },
] as const;
const loaded: Loaded[] = [];
afterAll(async () => {
  for (const m of loaded) await m.release();
});

/** The model's vision encoder (the protected field, for inspection). */
const visionOf = (m: Loaded) => (m as unknown as { vision: VisionSession }).vision;

describe.each(fixtures)('$name', ({ Model, checkpoint, inputs: inputsPath }) => {
  const load = async (visionSession: VisionSessionMode) => {
    const m = await (Model as typeof Ernie45VL).fromPretrained(join(FIXTURE_DIR, checkpoint), {
      device: 'cpu',
      profile: { visionSession },
    });
    loaded.push(m);
    return m as Loaded;
  };

  it("'per-call' gives the ids and logits of 'resident' and holds no vision session outside an encoding", async () => {
    const inputs = await readTensors(join(FIXTURE_DIR, inputsPath));
    const resident = await load('resident');
    const perCall = await load('per-call');
    expect(visionOf(resident).held).toBe(true);
    expect(visionOf(perCall).held).toBe(false); // released at load, after the graph was opened once
    const opts = { maxNewTokens: 4, eos: [] };
    const a = await resident.generate(inputs as never, opts);
    for (let r = 0; r < 2; r++) {
      const b = await perCall.generate(inputs as never, opts);
      expect(b.tokens).toEqual(a.tokens);
      expect(visionOf(perCall).held).toBe(false);
    }
    const fa = await resident.forward(inputs as never);
    const fb = await perCall.forward(inputs as never);
    expect(Array.from(fb.logits.data)).toEqual(Array.from(fa.logits.data));
    expect(visionOf(resident).held).toBe(true);
  });

  it('refuses an unknown mode (BAD_LOAD_OPTIONS) and a released model (SESSION_RELEASED)', async () => {
    const err = await load('always' as VisionSessionMode).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).code).toBe('BAD_LOAD_OPTIONS');
    const m = await load('per-call');
    await m.release();
    await expect(visionOf(m).run({})).rejects.toMatchObject({ code: 'SESSION_RELEASED' });
  });
});
