import { GraphError } from './errors.js';
import type { TensorRef } from './tensor-ref.js';

/**
 * A component's parameters under its own (mapped) names. `sub('blocks.3')`
 * gives a view whose names are relative to that module, mirroring the graph's
 * scopes, so builders read like the reference module tree.
 */
export class Weights {
  private constructor(
    private readonly table: ReadonlyMap<string, TensorRef>,
    private readonly prefix: string,
  ) {}

  static from(entries: ReadonlyMap<string, TensorRef> | Record<string, TensorRef>): Weights {
    const table = entries instanceof Map ? entries : new Map(Object.entries(entries));
    return new Weights(table, '');
  }

  /** A view of the parameters under `module` (`blocks.3.attn`). */
  sub(module: string): Weights {
    return new Weights(this.table, `${this.prefix}${module}.`);
  }

  fullName(name: string): string {
    return `${this.prefix}${name}`;
  }

  has(name: string): boolean {
    return this.table.has(this.fullName(name));
  }

  /** The tensor named `name`; a missing one is an error naming the nearest names present. */
  get(name: string): TensorRef {
    const full = this.fullName(name);
    const ref = this.table.get(full);
    if (ref === undefined) {
      const near = nearestNames(full, [...this.table.keys()], 3);
      const hint = near.length > 0 ? ` Nearest present: ${near.map((n) => `'${n}'`).join(', ')}.` : ' No parameters were given.';
      throw new GraphError('MISSING_PARAMETER', `missing parameter '${full}'.${hint}`);
    }
    return ref;
  }

  /** Names in this view, relative to it. */
  names(): string[] {
    const out: string[] = [];
    for (const k of this.table.keys()) if (k.startsWith(this.prefix)) out.push(k.slice(this.prefix.length));
    return out.sort();
  }
}

/** The `k` names closest to `target` by edit distance (ties by name). */
export function nearestNames(target: string, candidates: readonly string[], k: number): string[] {
  return candidates
    .map((c) => ({ c, d: editDistance(target, c) }))
    .sort((a, b) => a.d - b.d || (a.c < b.c ? -1 : 1))
    .slice(0, k)
    .map((x) => x.c);
}

export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}
