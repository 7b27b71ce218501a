import { describe, expect, it } from 'vitest';
import { buildErnieTextDecoderModel } from './ernie/standalone.js';
import { buildGraniteTextDecoderModel } from './granite/standalone.js';
import { graniteStep } from './test-utils/granite-runner.js';
import { sessionFor } from './test-utils/ort.js';
import { randomGraniteWeights, randomWeights, tinyConfig, tinyGraniteConfig } from './test-utils/random-model.js';
import { step } from './test-utils/runner.js';

// logits_to_keep = n: the logits of the last n positions of every row, computed from the same hidden states, so
// they are the last n rows of the all-positions logits; 0 (HF: all) and n >= S give every position.
const [B, S] = [2, 5];
const mask = [0, 0, 1, 1, 1, 1, 1, 1, 1, 1];

/** Rows [S - n, S) of each batch row of a [B, S, V] block, as one [B, n, V] block. */
function lastRows(all: Float32Array, n: number, V: number): Float32Array {
  const out = new Float32Array(B * n * V);
  for (let b = 0; b < B; b++) out.set(all.subarray((b * S + S - n) * V, (b * S + S) * V), b * n * V);
  return out;
}

function expectKeeps(all: Float32Array, kept: Record<number, Float32Array>, V: number): void {
  expect(all.length).toBe(B * S * V);
  for (const [n, got] of Object.entries(kept).map(([k, v]) => [Number(k), v] as const)) {
    const want = n === 0 || n >= S ? all : lastRows(all, n, V);
    expect(got.length, `logits_to_keep ${n}`).toBe(want.length);
    let diff = 0;
    for (let i = 0; i < want.length; i++) diff = Math.max(diff, Math.abs(got[i]! - want[i]!));
    expect(diff, `logits_to_keep ${n}`).toBeLessThanOrEqual(1e-5);
  }
}

describe('logits_to_keep', () => {
  it('ERNIE: 0 keeps all positions, n the last n, and the graph without the input is the same for all', async () => {
    const cfg = tinyConfig;
    const { weights } = randomWeights(cfg);
    const plain = await sessionFor(buildErnieTextDecoderModel(weights, cfg));
    const keeping = await sessionFor(buildErnieTextDecoderModel(weights, cfg, { logitsToKeep: true }));
    const ids = Array.from({ length: B * S }, (_, i) => (i * 7 + 3) % cfg.vocabSize);
    const pos = new BigInt64Array(3 * B * S);
    for (let n = 0; n < 3 * B * S; n++) pos[n] = BigInt(n % S);
    const x = { B, S, ids, moeType: ids.map((_, i) => i % 2), mask, positionIds: pos };
    const all = (await step(plain, cfg, x)).logits;
    const kept: Record<number, Float32Array> = {};
    for (const n of [0, 1, 2, S, S + 3]) kept[n] = (await step(keeping, cfg, { ...x, logitsToKeep: n })).logits;
    expectKeeps(all, kept, cfg.vocabSize);
  });

  it('Granite: the same, after logits_scaling', async () => {
    const config = tinyGraniteConfig;
    const weights = randomGraniteWeights(config, 50);
    const plain = await sessionFor(buildGraniteTextDecoderModel(weights, config, { levels: [] }));
    const keeping = await sessionFor(buildGraniteTextDecoderModel(weights, config, { levels: [], logitsToKeep: true }));
    const ids = [0, 0, 5, 9, 1, 4, 9, 2, 7, 3];
    const x = { B, S, ids, mask, positionIds: BigInt64Array.from([0, 0, 0, 1, 2, 0, 1, 2, 3, 4], BigInt) };
    const all = (await graniteStep(plain, config, 0, x)).logits;
    const kept: Record<number, Float32Array> = {};
    for (const n of [0, 1, 3, S]) kept[n] = (await graniteStep(keeping, config, 0, { ...x, logitsToKeep: n })).logits;
    expectKeeps(all, kept, config.vocabSize);
  });
});
