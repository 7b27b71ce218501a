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
  it('generate the same ids over 270 tokens (the append cache grows once)', async () => {
    const inputs = await readTensors(join(FIXTURES, model, 'cases', name, 'inputs.safetensors'));
    const ids: number[][][] = [];
    for (const kvCache of ['concat', 'append'] as const) {
      const m = await loadPretrained(join(FIXTURES, model), { device: 'cpu', profile: { kvCache } });
      try {
        // eos: [] so every row runs all steps: past KV_CACHE_CHUNK (256) generated tokens the append cache
        // grows once (reserve), then fills to its last slot.
        const r = await m.generate(inputs, { maxNewTokens: 270, eos: [] });
        expect(r.tokens.every((row) => row.length === 270)).toBe(true);
        ids.push(r.tokens);
      } finally {
        await m.release();
      }
    }
    expect(ids[1]).toEqual(ids[0]);
  });
});
