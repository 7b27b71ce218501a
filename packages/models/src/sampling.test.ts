import { describe, expect, it } from 'vitest';
import { ModelError } from './errors.js';
import { type DecodeSteps, generateTokens } from './generate.js';
import { argmax, sampleToken, seededRandom } from './sampling.js';

describe('sampling', () => {
  const logits = Float32Array.from([0.1, 2.0, 1.9, -1, 2.0]);

  it('greedy takes the first maximum, as torch.argmax', () => {
    expect(argmax(logits)).toBe(1);
    expect(sampleToken(logits, {}, Math.random)).toBe(1);
  });

  it('top-k 1 is greedy whatever the temperature', () => {
    const r = seededRandom(3);
    for (let i = 0; i < 20; i++) expect(sampleToken(logits, { temperature: 5, topK: 1 }, r)).toBe(1);
  });

  it('a tiny positive temperature tends to greedy: only the maxima are drawn, never a NaN pick of the least likely', () => {
    const r = seededRandom(5);
    const one = Float32Array.from([0.1, 2.5, 1.9, -1, 2.0]);
    for (const temperature of [1e-310, 5e-324, 1e-300, 1e-30]) {
      for (let i = 0; i < 20; i++) expect(sampleToken(one, { temperature }, r)).toBe(1);
      // Tied maxima (ids 1 and 4 of `logits`) share the draw; nothing else is ever drawn.
      for (let i = 0; i < 20; i++) expect([1, 4]).toContain(sampleToken(logits, { temperature }, r));
    }
  });

  it('top-p keeps the smallest nucleus; frequencies follow the softmax', () => {
    const r = seededRandom(7);
    const counts = new Map<number, number>();
    for (let i = 0; i < 20000; i++) {
      const t = sampleToken(logits, { temperature: 1, topP: 0.9 }, r);
      counts.set(t, (counts.get(t) ?? 0) + 1);
    }
    // Sorted probs: ids 1, 4 (e^2 each), 2 (e^1.9), 0, 3. The nucleus at 0.9 keeps 1, 4, 2.
    expect([...counts.keys()].sort()).toEqual([1, 2, 4]);
    const z = 2 * Math.exp(2) + Math.exp(1.9);
    expect((counts.get(2) ?? 0) / 20000).toBeCloseTo(Math.exp(1.9) / z, 1);
  });

  it('the same seed gives the same tokens', () => {
    const draw = (seed: number) => {
      const r = seededRandom(seed);
      return Array.from({ length: 30 }, () => sampleToken(logits, { temperature: 1.3 }, r));
    };
    expect(draw(11)).toEqual(draw(11));
    expect(draw(11)).not.toEqual(draw(12));
  });

  it('rejects bad options with a typed error', async () => {
    const steps: DecodeSteps = { batchSize: 1, vocabSize: 5, prefill: async () => logits, step: async () => logits };
    await expect(generateTokens(steps, { maxNewTokens: 2, topP: 0 })).rejects.toBeInstanceOf(ModelError);
    await expect(generateTokens(steps, { maxNewTokens: -1 })).rejects.toThrow(/maxNewTokens/);
  });

  it('stops a row at eos and pads it, streams tokens', async () => {
    // Row 0 counts up 1, 2, 3 ...; row 1 emits eos (9) at its second step.
    let calls = 0;
    const V = 10;
    const make = (t0: number, t1: number) => {
      const l = new Float32Array(2 * V);
      l[t0] = 1;
      l[V + t1] = 1;
      return l;
    };
    const steps: DecodeSteps = {
      batchSize: 2,
      vocabSize: V,
      prefill: async () => make(1, 5),
      step: async () => {
        calls++;
        return make(1 + calls, calls === 1 ? 9 : 6);
      },
    };
    const streamed: number[][] = [];
    const r = await generateTokens(steps, { maxNewTokens: 4, eos: 9, padTokenId: 0, onToken: (t) => streamed.push([...t]) });
    expect(r.tokens).toEqual([
      [1, 2, 3, 4],
      [5, 9, 0, 0],
    ]);
    expect(streamed).toHaveLength(4);
    expect(r.timings.stepMs).toHaveLength(3);
  });

  it('stops early once every row has emitted eos', async () => {
    let steps = 0;
    const V = 4;
    const eosAt = (t: number) => Float32Array.from({ length: 2 * V }, (_, i) => (i % V === t ? 1 : 0));
    const r = await generateTokens(
      { batchSize: 2, vocabSize: V, prefill: async () => eosAt(1), step: async () => (++steps === 2 ? eosAt(3) : eosAt(2)) },
      { maxNewTokens: 10, eos: 3 },
    );
    expect(r.tokens).toEqual([
      [1, 2, 3],
      [1, 2, 3],
    ]);
    expect(steps).toBe(2);
  });
});
