import { fields } from '@vlmkit/config';
import { describe, expect, it } from 'vitest';
import { decoderGeometry } from './attention-config.js';
import { ernieTextConfigFromHf } from './ernie/config.js';
import { graniteTextConfigFromHf } from './granite/config.js';

// Both decoders read their attention geometry through decoderGeometry: the same checks for either family,
// each with its own default for num_key_value_heads.
describe('decoderGeometry', () => {
  const text = { hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4 };

  it('takes the family default for KV heads from the query heads, and head_dim from hidden_size', () => {
    const g = decoderGeometry(fields(text, 'test'), 64, (heads) => ({ default: heads, from: 'test' }));
    expect(g).toEqual({ hiddenSize: 64, numHiddenLayers: 2, numAttentionHeads: 4, numKeyValueHeads: 4, headDim: 16 });
  });

  it.each([
    ['ERNIE', ernieTextConfigFromHf],
    ['Granite', graniteTextConfigFromHf],
  ] as const)('%s refuses KV heads that do not divide the query heads, and an odd head_dim', (_, read) => {
    const base = { ...text, vocab_size: 32, intermediate_size: 32, num_key_value_heads: 2, freq_allocation: 4 };
    expect(() => read({ ...base, num_key_value_heads: 3 })).toThrow(/num_key_value_heads \(3\) must divide num_attention_heads \(4\)/);
    expect(() => read({ ...base, head_dim: 15 })).toThrow(/head_dim gives head_dim 15; it must be an even integer/);
    expect(read(base)).toMatchObject({ hiddenSize: 64, numHiddenLayers: 2, numAttentionHeads: 4, numKeyValueHeads: 2, headDim: 16 });
  });
});
