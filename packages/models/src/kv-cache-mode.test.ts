// The decoder's two KV cache modes give the same generation: 'append' (default: a cache pre-allocated for
// prompt + new tokens, each step writes its new rows) and 'concat' (HF / optimum: each step returns past + new).
// Left-padded batches of both models; the ids are also checked against HF in model.test.ts (default mode).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPretrained } from './registry.js';
import { FIXTURES, readTensors } from './test-utils/fixtures.js';

describe.each([
  ['ernie-tiny', 'batch-padded'],
  ['granite-tiny', 'batch-2'],
])('%s %s: kvCache append and concat', (model, name) => {
  it('generate the same ids, and a cache of prompt + new tokens holds every step', async () => {
    const inputs = await readTensors(join(FIXTURES, model, 'cases', name, 'inputs.safetensors'));
    const ids: number[][][] = [];
    for (const kvCache of ['concat', 'append'] as const) {
      const m = await loadPretrained(join(FIXTURES, model), { device: 'cpu', kvCache });
      try {
        // eos: [] so every row runs all 12 steps (the cache fills to its last slot).
        const r = await m.generate(inputs, { maxNewTokens: 12, eos: [] });
        expect(r.tokens.every((row) => row.length === 12)).toBe(true);
        ids.push(r.tokens);
      } finally {
        await m.release();
      }
    }
    expect(ids[1]).toEqual(ids[0]);
  });
});
