import { Grid, type GridMerge, type GridThw } from '@vlmkit/config';
import { MropeError } from './errors.js';

export type { GridThw };

/** Token ids or a mask for one sequence, as tokenizers and ORT hand them over. */
export type IntArray = readonly number[] | Int32Array | BigInt64Array;

/** Output integer dtype: int64 matches HF/ORT `position_ids`, int32 is smaller. */
export type IdDtype = 'int32' | 'int64';

/** A flat id tensor; its layout is stated by the shape next to it. */
export type IdTensor = Int32Array | BigInt64Array;

/** 3D position ids for a batch, and the decode-time delta of each row. */
export interface MropePositions {
  /** [3, B, S] row-major: axis 0 is (t, h, w). */
  positionIds: IdTensor;
  shape: [3, number, number];
  /**
   * Per row: (max position + 1) - (number of unmasked tokens). The position of
   * a token generated after the prompt is its unmasked index plus this delta,
   * on all three axes (see `decodePositionIds`).
   */
  mropePositionDeltas: number[];
}

function isIntArray(x: unknown): x is IntArray {
  return x instanceof Int32Array || x instanceof BigInt64Array || (Array.isArray(x) && (x.length === 0 || typeof x[0] === 'number'));
}

/** Accepts one sequence or a batch of sequences; returns rows of plain numbers. */
export function toRows(x: IntArray | readonly IntArray[], what: string): number[][] {
  if (isIntArray(x)) return [Array.from(x, Number)];
  if (!Array.isArray(x))
    throw new MropeError('SHAPE_MISMATCH', `${what}: expected number[], Int32Array, BigInt64Array or an array of them.`);
  return x.map((row: IntArray, i: number) => {
    if (!isIntArray(row)) throw new MropeError('SHAPE_MISMATCH', `${what}[${i}]: expected number[], Int32Array or BigInt64Array.`);
    return Array.from(row, Number);
  });
}

/** True when the caller used 64-bit ids, so outputs default to int64 too. */
export function usesBigInt(x: IntArray | readonly IntArray[]): boolean {
  return x instanceof BigInt64Array || (Array.isArray(x) && x[0] instanceof BigInt64Array);
}

export function allocIds(n: number, dtype: IdDtype): IdTensor {
  return dtype === 'int64' ? new BigInt64Array(n) : new Int32Array(n);
}

export function setId(out: IdTensor, i: number, v: number): void {
  if (out instanceof BigInt64Array) out[i] = BigInt(v);
  else out[i] = v;
}

/** Reads position ids given as number[], Int32Array or BigInt64Array into a Float64-safe number array. */
export function idsToNumbers(x: IntArray): number[] {
  return Array.from(x, Number);
}

/** `grid` checked against `merge` by the one grid rule (@vlmkit/config `Grid`), refused as MropeError INVALID_GRID. */
export function checkGrid(grid: GridThw, name: string, merge: GridMerge): Grid {
  return Grid.of(grid, name, merge, (message) => new MropeError('INVALID_GRID', message));
}

/** Plain numbers from an id tensor of either width (for logging, tests, JSON). */
export function idsToArray(ids: IdTensor): number[] {
  return ids instanceof BigInt64Array ? Array.from(ids, Number) : Array.from(ids);
}
