import { appendAttentionPass } from './append-attention.js';
import { contribAttentionPass } from './contrib-attention.js';
import type { GraphPass } from './rewrite.js';
import { skipLayerNormPass, skipRmsNormPass } from './skip-norm.js';

/**
 * What a graph built for onnxruntime's com.microsoft kernels ('contrib') runs after building, in order:
 * each pass fuses a pattern of standard ops into one fused kernel where it fits.
 */
export const CONTRIB_PASSES: readonly GraphPass[] = [skipRmsNormPass, skipLayerNormPass, contribAttentionPass()];

/**
 * What a decoder graph with an 'append' KV cache (its attention's present outputs unread) runs on ORT's CPU EP
 * after building, and after `CONTRIB_PASSES` when both apply: the cache read in place, long prompts in causal
 * blocks. Only for causal decoders (see `appendAttentionPass`).
 */
export const APPEND_ATTENTION_PASSES: readonly GraphPass[] = [appendAttentionPass];
