import type { GraphPass } from './rewrite.js';
import { skipLayerNormPass, skipRmsNormPass } from './skip-norm.js';

/**
 * What a graph built for onnxruntime's com.microsoft kernels ('contrib') runs after building, in order:
 * each pass fuses a pattern of standard ops into one fused kernel where it fits.
 */
export const CONTRIB_PASSES: readonly GraphPass[] = [skipRmsNormPass, skipLayerNormPass];
