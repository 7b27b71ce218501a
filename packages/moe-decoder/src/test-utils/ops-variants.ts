import { CONTRIB_PASSES, type ContribAttentionKernel, contribAttentionPass, type GraphPass } from '@vlmkit/onnx-graph';
import type { ExpertsImpl } from '../ernie/moe.js';

/** `CONTRIB_PASSES` with the attention fused into `kernel`. */
export function contribPasses(kernel: ContribAttentionKernel): GraphPass[] {
  const attention = contribAttentionPass({ kernel });
  return CONTRIB_PASSES.map((p) => (p.name === 'contrib-attention' ? attention : p));
}

/**
 * The decoder fixture tests run once per op choice: the standard ops, and the com.microsoft ones with each
 * attention kernel: built with `options`, then rewritten by `passes`. `CONTRIB_PASSES` on fused experts without
 * the empty-modality If is models' cuda profile's graph (MultiHeadAttention in float32); GroupQueryAttention is
 * the pass's other kernel, on a build with the If and ERNIE's experts as the com.microsoft MoE (Granite has none).
 */
export const OPS_VARIANTS: readonly {
  label: string;
  options: { experts?: ExpertsImpl; emptyModalityIf?: boolean };
  passes: readonly GraphPass[];
}[] = [
  { label: 'standard ops', options: {}, passes: [] },
  { label: 'contrib ops, MultiHeadAttention', options: { experts: 'fused', emptyModalityIf: false }, passes: CONTRIB_PASSES },
  { label: 'contrib ops, GroupQueryAttention', options: { experts: 'fused' }, passes: contribPasses('gqa') },
];
