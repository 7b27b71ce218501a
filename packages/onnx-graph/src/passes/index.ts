import { GraphError } from '../errors.js';
import { appendAttentionPass } from './append-attention.js';
import { contribAttentionPass } from './contrib-attention.js';
import { expertGateUpPass } from './expert-gate-up.js';
import { expertGroupsPass } from './expert-groups.js';
import { moeExpertsPass, qmoeExpertsPass, wideMoeExpertsPass } from './moe-experts.js';
import { nonEmptyScatterPass } from './non-empty-scatter.js';
import { oneFrameAttentionPass } from './one-frame-attention.js';
import type { GraphPass } from './rewrite.js';
import { skipLayerNormPass, skipRmsNormPass } from './skip-norm.js';
import { storedLayoutCastPass, storedLayoutPass } from './stored-layout.js';
import { webgpuAttentionPass } from './webgpu-attention.js';
import { webgpuGeluPass } from './webgpu-gelu.js';
import { webgpuOpsetPass } from './webgpu-opset.js';

/**
 * The passes a profile names, by their stable `name` (`resolvePasses`; the CLI's and the benchmarks'
 * overrides). Quantization (`quantizeLinearPass`) takes its options from the load, so it is not listed.
 */
export const PASSES = {
  'skip-rms-norm': skipRmsNormPass,
  'skip-layer-norm': skipLayerNormPass,
  'contrib-attention': contribAttentionPass(),
  'contrib-attention-mha': contribAttentionPass({ kernel: 'mha' }),
  'contrib-attention-gqa': contribAttentionPass({ kernel: 'gqa' }),
  'append-attention': appendAttentionPass,
  'moe-experts': moeExpertsPass,
  'moe-experts-wide': wideMoeExpertsPass,
  'qmoe-experts': qmoeExpertsPass,
  'expert-gate-up': expertGateUpPass,
  'expert-groups': expertGroupsPass,
  'one-frame-attention': oneFrameAttentionPass,
  'stored-layout': storedLayoutPass,
  'stored-layout-cast': storedLayoutCastPass,
  'webgpu-attention': webgpuAttentionPass,
  'non-empty-scatter': nonEmptyScatterPass,
  'webgpu-gelu': webgpuGeluPass,
  'webgpu-opset': webgpuOpsetPass,
} as const satisfies Readonly<Record<string, GraphPass>>;

export type PassName = keyof typeof PASSES;
export const PASS_NAMES = Object.keys(PASSES) as PassName[];

/** The passes named, in order; a GraphError naming the known ones for a name that is not one. */
export function resolvePasses(names: readonly string[]): GraphPass[] {
  return names.map((name) => {
    const pass = (PASSES as Readonly<Record<string, GraphPass>>)[name];
    if (pass === undefined) throw new GraphError('BAD_ARGUMENT', `unknown pass '${name}'; the passes are ${PASS_NAMES.join(', ')}`);
    return pass;
  });
}

/**
 * What a graph built for onnxruntime's com.microsoft kernels ('contrib') runs after building, in order:
 * each pass fuses a pattern of standard ops into one fused kernel where it fits.
 */
export const CONTRIB_PASSES: readonly GraphPass[] = [PASSES['skip-rms-norm'], PASSES['skip-layer-norm'], PASSES['contrib-attention']];

/**
 * What a decoder graph with an 'append' KV cache (its attention's present outputs unread) runs on ORT's CPU EP
 * after building, and after `CONTRIB_PASSES` when both apply: the cache read in place, long prompts in causal
 * blocks. Only for causal decoders (see `appendAttentionPass`).
 */
export const APPEND_ATTENTION_PASSES: readonly GraphPass[] = [PASSES['append-attention']];

/**
 * What a graph for onnxruntime-web's WebGPU EP runs last (after `CONTRIB_PASSES`, which make attention
 * MultiHeadAttention): its kernels' limits met without changing a number beyond one rounding. MultiHeadAttention
 * takes only a full [B, num_heads, S, T] bias and ignores `scale`; ScatterND takes no zero-sized input (a prompt
 * without image rows); Gelu's tanh form is off by up to ~8e-5; its kernels stop at opset 21 (`WEBGPU_OPSET`).
 */
export const WEBGPU_PASSES: readonly GraphPass[] = [
  PASSES['webgpu-attention'],
  PASSES['non-empty-scatter'],
  PASSES['webgpu-gelu'],
  PASSES['webgpu-opset'],
];
