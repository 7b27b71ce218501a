import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelError } from '../errors.js';
import { FIXTURES } from '../test-utils/fixtures.js';
import { granite4VisionConfig } from './config.js';
import { analyzeGranitePrompt } from './prompt.js';

const config = granite4VisionConfig(
  JSON.parse(readFileSync(join(FIXTURES, 'granite-tiny', 'config.json'), 'utf8')) as Record<string, unknown>,
);
const I = BigInt(config.tokens.image); // 255 in granite-tiny
const ids = (xs: (number | bigint)[]) => BigInt64Array.from(xs, (x) => BigInt(x));

describe('analyzeGranitePrompt', () => {
  it('config tokens: the placeholder, eos and pad of granite-tiny (text_config)', () => {
    expect(config.tokens).toEqual({ image: 255, eos: [2], pad: 0 });
    expect(config.imageTokenId).toBe(255);
  });

  it('a left-padded batch: image rows in row-major order, HF generate positions (1 on padding), real tokens per row', () => {
    const p = analyzeGranitePrompt(
      { inputIds: ids([0, 0, 5, I, I, 7, 5, I, 6, 7]), shape: [2, 5], attentionMask: ids([0, 0, 1, 1, 1, 1, 1, 1, 1, 1]) },
      config,
    );
    expect(p.imagePositions).toEqual([3, 4, 7]);
    expect(Array.from(p.positionIds, Number)).toEqual([1, 1, 0, 1, 2, 0, 1, 2, 3, 4]);
    expect(p.realTokens).toEqual([3, 5]);
    expect(Array.from(p.attentionMask, Number)).toEqual([0, 0, 1, 1, 1, 1, 1, 1, 1, 1]);
  });

  it('given position_ids are used as they are; no mask means every token is real', () => {
    const given = ids([0, 0, 0, 1]);
    const p = analyzeGranitePrompt({ inputIds: ids([5, 6, 7, 8]), shape: [1, 4], positionIds: given }, config);
    expect(p.positionIds).toBe(given);
    expect(p.realTokens).toEqual([4]);
    expect(p.imagePositions).toEqual([]);
  });

  it('shapes that do not fit input_ids are BAD_INPUT errors naming the input', () => {
    const bad = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(ModelError);
        expect((e as ModelError).code).toBe('BAD_INPUT');
        return (e as ModelError).message;
      }
      return 'no error';
    };
    expect(bad(() => analyzeGranitePrompt({ inputIds: ids([1, 2, 3]), shape: [1, 4] }, config))).toMatch(/input_ids has 3 values/);
    expect(bad(() => analyzeGranitePrompt({ inputIds: ids([1, 2]), shape: [1, 2], attentionMask: ids([1]) }, config))).toMatch(
      /attention_mask must have the shape of input_ids \[1, 2\]/,
    );
    expect(bad(() => analyzeGranitePrompt({ inputIds: ids([1, 2]), shape: [1, 2], positionIds: ids([0, 1, 2]) }, config))).toMatch(
      /position_ids must have the shape of input_ids \[1, 2\]/,
    );
  });
});
