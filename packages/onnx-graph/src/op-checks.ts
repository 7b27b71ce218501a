import { isFloat } from './dtype.js';
import { GraphError } from './errors.js';
import { normAxis } from './shape.js';
import type { Value } from './value.js';

/**
 * The operand checks the op files share. Each throws a GraphError naming the node `name`, so a builder's
 * mistake points at the scoped node a reader can find.
 */

/** All of `vs` have one dtype. */
export function sameDType(name: string, ...vs: Value[]): void {
  const d = vs[0]!.dtype;
  for (const v of vs) {
    if (v.dtype !== d) throw new GraphError('DTYPE_MISMATCH', `operand dtypes differ: ${vs.map(String).join(', ')}`, name);
  }
}

/** `x` is a float tensor. */
export function requireFloat(name: string, x: Value): void {
  if (!isFloat(x.dtype)) throw new GraphError('DTYPE_MISMATCH', `expected a float tensor, got ${x}`, name);
}

/** `indices` is int64 or int32. */
export function requireIndex(name: string, indices: Value): void {
  if (indices.dtype !== 'int64' && indices.dtype !== 'int32') {
    throw new GraphError('DTYPE_MISMATCH', `indices must be int64 or int32, got ${indices}`, name);
  }
}

/** `axis` (negative counts from the end) as an index into a shape of `rank`. */
export function checkAxis(name: string, axis: number, rank: number): number {
  const a = normAxis(axis, rank);
  if (a === undefined) throw new GraphError('RANK_MISMATCH', `axis ${axis} out of range for rank ${rank}`, name);
  return a;
}
