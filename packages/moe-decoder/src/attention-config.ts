// The attention geometry both decoders read from a text config: the same fields, checks and head_dim rule.
import type { ConfigObject, Default } from '@vlmkit/config';

/** A decoder's layer count and attention heads, validated. */
export interface DecoderGeometry {
  hiddenSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
}

/**
 * Reads num_hidden_layers, the query and KV heads (`kvHeads`: the family's default for num_key_value_heads,
 * given the query heads) and head_dim, or hidden_size // num_attention_heads as HF's attention modules derive it. KV heads must
 * divide query heads and head_dim must be an even integer (rotary pairs).
 */
export function decoderGeometry(
  j: ConfigObject,
  hiddenSize: number,
  kvHeads: (numAttentionHeads: number) => Default<number>,
): DecoderGeometry {
  const numHiddenLayers = j.int('num_hidden_layers');
  const numAttentionHeads = j.int('num_attention_heads');
  const numKeyValueHeads = j.int('num_key_value_heads', kvHeads(numAttentionHeads));
  if (numAttentionHeads % numKeyValueHeads !== 0) {
    j.fail('INCONSISTENT_CONFIG', 'num_key_value_heads', `(${numKeyValueHeads}) must divide num_attention_heads (${numAttentionHeads}).`);
  }
  const headDim = j.optionalInt('head_dim') ?? hiddenSize / numAttentionHeads;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) {
    j.fail('INCONSISTENT_CONFIG', j.has('head_dim') ? 'head_dim' : 'hidden_size', `gives head_dim ${headDim}; it must be an even integer.`);
  }
  return { hiddenSize, numHiddenLayers, numAttentionHeads, numKeyValueHeads, headDim };
}
