import { CONTRIB_PASSES, type ContribAttentionKernel, contribAttentionPass, type GraphPass } from '@vlmkit/onnx-graph';
import type { ExpertsImpl } from '../ernie/moe.js';
import type { DecoderOpsOptions } from '../types.js';

/** `CONTRIB_PASSES` with the attention fused into `kernel`. */
export function contribPasses(kernel: ContribAttentionKernel): GraphPass[] {
  const attention = contribAttentionPass({ kernel });
  return CONTRIB_PASSES.map((p) => (p.name === 'contrib-attention' ? attention : p));
}

/**
 * The decoder fixture tests run once per op choice: the standard ops, and the com.microsoft ones with each
 * attention kernel: built with `options`, then rewritten by `passes`. `ops: 'contrib'` is the models' graph (the
 * builder applies `CONTRIB_PASSES`: MultiHeadAttention in float32); GroupQueryAttention is the pass's other
 * kernel, on a plain build with ERNIE's experts as the com.microsoft MoE (Granite has none).
 */
export const OPS_VARIANTS: readonly {
  label: string;
  options: DecoderOpsOptions & { experts?: ExpertsImpl };
  passes: readonly GraphPass[];
}[] = [
  { label: 'standard ops', options: {}, passes: [] },
  { label: 'contrib ops, MultiHeadAttention', options: { ops: 'contrib' }, passes: [] },
  { label: 'contrib ops, GroupQueryAttention', options: { experts: 'fused' }, passes: contribPasses('gqa') },
];
