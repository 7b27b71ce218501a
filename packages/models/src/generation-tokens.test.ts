import { ConfigError } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { generationTokens } from './generation-tokens.js';

describe('generationTokens: eos / pad as HF generate reads them', () => {
  it('generation_config.json wins over config.json', () => {
    const config = { text_config: { eos_token_id: 2, pad_token_id: 0 } };
    expect(generationTokens(config, { eos_token_id: [7, 9], pad_token_id: 3 })).toEqual({ eos: [7, 9], pad: 3 });
  });

  it('without generation_config.json: text_config first, then the top level; one id or a list', () => {
    expect(generationTokens({ text_config: { eos_token_id: 2 }, eos_token_id: 5, pad_token_id: 1 })).toEqual({ eos: [2], pad: 1 });
    expect(generationTokens({ eos_token_id: [4, 6] })).toEqual({ eos: [4, 6], pad: 4 });
  });

  it('a missing pad is the first eos (HF _prepare_special_tokens); no eos: rows run to the end', () => {
    expect(generationTokens({}, { eos_token_id: [11, 12] })).toEqual({ eos: [11, 12], pad: 11 });
    expect(generationTokens({})).toEqual({ eos: [], pad: 0 });
  });

  it('refuses ids that are not integers, naming the file and field (never ignored silently)', () => {
    expect(() => generationTokens({}, { eos_token_id: '2' })).toThrow(ConfigError);
    expect(() => generationTokens({}, { eos_token_id: '2' })).toThrow(/generation_config\.json: eos_token_id/);
    expect(() => generationTokens({ text_config: { eos_token_id: 2.5 } })).toThrow(/text_config\.eos_token_id/);
    expect(() => generationTokens({ pad_token_id: -1 })).toThrow(/pad_token_id/);
    expect(() => generationTokens({}, { pad_token_id: [1, 2] })).toThrow(/pad_token_id must be one id/);
  });
});
