import type { DType } from './dtype.js';
import { formatShape, type Shape } from './shape.js';

/**
 * A graph value: the output of a node, a graph input, or an initializer.
 * Carries its dtype and (possibly symbolic) shape so ops can check their
 * operands while the graph is built.
 */
export class Value {
  constructor(
    /** The graph that owns the value; ops refuse values from another graph. */
    readonly owner: object,
    readonly name: string,
    readonly dtype: DType,
    readonly shape: Shape,
  ) {}

  get rank(): number {
    return this.shape.length;
  }

  /** The dim at `axis` (negative counts from the end). */
  dim(axis: number): Shape[number] {
    const a = axis < 0 ? axis + this.shape.length : axis;
    const d = this.shape[a];
    if (d === undefined) throw new RangeError(`axis ${axis} out of range for ${this.toString()}`);
    return d;
  }

  toString(): string {
    return `${this.name}: ${this.dtype}${formatShape(this.shape)}`;
  }
}
