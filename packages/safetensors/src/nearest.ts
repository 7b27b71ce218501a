import { fail } from './errors.js';

/** Levenshtein distance, two rows, O(a*b) time and O(b) memory. */
export function editDistance(a: string, b: string): number {
  let prev = new Array<number>(b.length + 1);
  let curr = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    curr[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      curr[j] = Math.min(prev[j]! + 1, curr[j - 1]! + 1, prev[j - 1]! + cost);
    }
    [prev, curr] = [curr, prev];
  }
  return prev[b.length]!;
}

/** The `count` names closest to `wanted` by edit distance (ties: alphabetical). */
export function nearestNames(wanted: string, names: Iterable<string>, count = 3): string[] {
  const scored: Array<[number, string]> = [];
  for (const name of names) scored.push([editDistance(wanted, name), name]);
  scored.sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0));
  return scored.slice(0, count).map(([, name]) => name);
}

/** "Nearest names present: 'a', 'b', 'c'." or a note that there are none. */
export function describeNearest(wanted: string, names: Iterable<string>): string {
  const near = nearestNames(wanted, names);
  if (near.length === 0) return 'The checkpoint holds no tensors.';
  return `Nearest names present: ${near.map((n) => `'${n}'`).join(', ')}.`;
}

/**
 * The entry of the tensor `name` in a file's or a checkpoint's table; TENSOR_NOT_FOUND naming `where` and the
 * nearest names present when it has none.
 */
export function tensorEntry<T>(entries: ReadonlyMap<string, T>, name: string, where: { file: string; kind: 'file' | 'checkpoint' }): T {
  const entry = entries.get(name);
  if (entry === undefined) {
    fail('TENSOR_NOT_FOUND', `expected a tensor of this name, found none in this ${where.kind}. ${describeNearest(name, entries.keys())}`, {
      file: where.file,
      tensor: name,
    });
  }
  return entry;
}
