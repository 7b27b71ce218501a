// Both models refuse token ids outside [0, vocab_size) by name, before any session runs: a negative id
// would otherwise be read by Gather from the end of the embedding table (id -5 = id V-5) and give the
// logits of another token with exit 0.
import { join } from 'node:path';
import { int64 } from '@vlmkit/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelError } from './errors.js';
import { loadPretrained, type PretrainedModel } from './registry.js';
import { FIXTURES, readTensors } from './test-utils/fixtures.js';

describe.each([
  ['ernie-tiny', 'text-only'],
  ['granite-tiny', 'batch-2'],
])('%s: input_ids out of range', (model, name) => {
  let m: PretrainedModel;
  beforeAll(async () => {
    m = await loadPretrained(join(FIXTURES, model), { device: 'cpu' });
  });
  afterAll(async () => m.release());

  it.each([-5, -1, 'vocab'] as const)('id %s is refused with BAD_INPUT naming its position; forward and generate alike', async (bad) => {
    const inputs = await readTensors(join(FIXTURES, model, 'cases', name, 'inputs.safetensors'));
    const ids = inputs.input_ids!;
    const data = BigInt64Array.from(ids.data as BigInt64Array);
    const seq = ids.dims[1]!;
    const vocab = (await m.forwardNamed(inputs)).logits!.dims[2]!;
    data[seq - 1] = BigInt(bad === 'vocab' ? vocab : bad);
    const changed = { ...inputs, input_ids: int64(data, [...ids.dims]) };
    for (const run of [() => m.forwardNamed(changed), () => m.generate(changed, { maxNewTokens: 2 })]) {
      const e = await run().catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ModelError);
      expect((e as ModelError).code).toBe('BAD_INPUT');
      expect((e as ModelError).message).toMatch(
        new RegExp(`input_ids\\[0, ${seq - 1}\\] is ${bad === 'vocab' ? vocab : bad}: token ids must be in \\[0, ${vocab}\\)`),
      );
    }
  });
});
