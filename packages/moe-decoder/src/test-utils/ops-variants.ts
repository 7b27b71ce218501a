import type { DecoderOpsOptions } from '../attention-contrib.js';

/** The decoder fixture tests run once per op choice: the standard ops, and the com.microsoft ones with each attention kernel. */
export const OPS_VARIANTS: readonly { label: string; options: DecoderOpsOptions }[] = [
  { label: 'standard ops', options: {} },
  { label: 'contrib ops, MultiHeadAttention', options: { ops: 'contrib', attentionKernel: 'mha' } },
  { label: 'contrib ops, GroupQueryAttention', options: { ops: 'contrib', attentionKernel: 'gqa' } },
];
