import { AttentionOps } from './ops-attention.js';

/**
 * The graph builder. Values carry dtype and shape; ops are methods that
 * return values and check their operands; names are scoped:
 *
 * ```ts
 * const g = new Graph();
 * const x = g.input('x', 'float32', ['batch', 4]);
 * const y = g.scope('fc', () => g.matmul(x, w));
 * g.output(y, 'y');
 * ```
 */
export class Graph extends AttentionOps {}
