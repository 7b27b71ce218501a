import { CONTRIB_PASSES, type ContribAttentionKernel, contribAttentionPass, type GraphPass } from '@vlmkit/onnx-graph';
import type { ExpertsImpl } from '../ernie/moe.js';

/** `CONTRIB_PASSES` with the attention fused into `kernel`. */
export function contribPasses(kernel: ContribAttentionKernel): GraphPass[] {
  const attention = contribAttentionPass({ kernel });
  return CONTRIB_PASSES.map((p) => (p.name === 'contrib-attention' ? attention : p));
}

/**
 * The decoder fixture tests run once per op choice: the standard ops, and the com.microsoft ones with each
 * attention kernel: built with `options` (ERNIE's routed experts as the MoE kernel; Granite has none), then
 * rewritten by `passes`.
 */
export const OPS_VARIANTS: readonly { label: string; options: { experts?: ExpertsImpl }; passes: readonly GraphPass[] }[] = [
  { label: 'standard ops', options: {}, passes: [] },
  { label: 'contrib ops, MultiHeadAttention', options: { experts: 'fused' }, passes: contribPasses('mha') },
  { label: 'contrib ops, GroupQueryAttention', options: { experts: 'fused' }, passes: contribPasses('gqa') },
];
