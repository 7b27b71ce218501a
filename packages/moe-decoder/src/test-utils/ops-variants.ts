import { CONTRIB_PASSES, type ContribAttentionKernel, contribAttentionPass, type GraphPass, moeExpertsPass } from '@vlmkit/onnx-graph';

/** `CONTRIB_PASSES` with the attention fused into `kernel`. */
export function contribPasses(kernel: ContribAttentionKernel): GraphPass[] {
  const attention = contribAttentionPass({ kernel });
  return CONTRIB_PASSES.map((p) => (p.name === 'contrib-attention' ? attention : p));
}

/**
 * The decoder fixture tests run once per op choice: the standard ops, and the com.microsoft ones with each
 * attention kernel: built with `options`, then rewritten by `passes`. `CONTRIB_PASSES` and ERNIE's experts as
 * the com.microsoft MoE (`moeExpertsPass`) without the empty-modality If is models' cuda profile's graph
 * (MultiHeadAttention in float32); GroupQueryAttention is the pass's other kernel, on a build with the If
 * (Granite has no experts).
 */
export const OPS_VARIANTS: readonly {
  label: string;
  options: { emptyModalityIf?: boolean };
  passes: readonly GraphPass[];
}[] = [
  { label: 'standard ops', options: {}, passes: [] },
  { label: 'contrib ops, MultiHeadAttention', options: { emptyModalityIf: false }, passes: [...CONTRIB_PASSES, moeExpertsPass] },
  { label: 'contrib ops, GroupQueryAttention', options: {}, passes: [...contribPasses('gqa'), moeExpertsPass] },
];
