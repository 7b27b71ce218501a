import { ControlFlowOps } from './ops-control.js';

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
 *
 * Loop and If bodies are graphs of this class too (`g.loop`, `g.if`).
 */
export class Graph extends ControlFlowOps {}
