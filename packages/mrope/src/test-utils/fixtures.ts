import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../../../../test-fixtures/mrope/', import.meta.url));

/** Reads a JSON fixture written by tools/mrope/make_cases.py. */
export function loadFixture<T>(name: string): T {
  return JSON.parse(readFileSync(dir + name, 'utf8')) as T;
}

export interface RopeIndexCase {
  name: string;
  input_ids: number[][];
  attention_mask: number[][];
  mm_token_type_ids: number[][];
  image_grid_thw: [number, number, number][];
  video_grid_thw: [number, number, number][];
  /** [3][B][S] */
  position_ids: number[][][];
  deltas: number[];
  second_per_grid_ts?: number[];
  tokens_per_second?: number;
}

export interface RopeIndexFixture {
  tokens: Record<string, number>;
  cases: RopeIndexCase[];
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}
