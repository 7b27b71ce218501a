import { GraphError } from './errors.js';
import { lazyTensor, type TensorRef } from './tensor-ref.js';

/** One parameter a builder reads: its name (relative to the component) and shape (Linear weights in PyTorch [out, in] layout). */
export interface ParameterSpec {
  readonly name: string;
  readonly shape: readonly number[];
}

/** Where a Weights view finds its tensors: a table of real ones, or a recorder that hands out placeholders. */
interface WeightSource {
  /** The tensor for a full name; `shape` is what the reader expects (a recorder creates it so). */
  lookup(fullName: string, shape: readonly number[] | undefined): TensorRef | undefined;
  names(): Iterable<string>;
}

/**
 * A component's parameters under its own (mapped) names. `sub('blocks.3')`
 * gives a view whose names are relative to that module, mirroring the graph's
 * scopes, so builders read like the reference module tree.
 */
export class Weights {
  private constructor(
    private readonly source: WeightSource,
    private readonly prefix: string,
  ) {}

  static from(entries: ReadonlyMap<string, TensorRef> | Record<string, TensorRef>): Weights {
    const table = entries instanceof Map ? entries : new Map(Object.entries(entries));
    return new Weights({ lookup: (name) => table.get(name), names: () => table.keys() }, '');
  }

  /**
   * Weights that hold nothing and record what a builder reads: each first
   * read of a name appends `{ name, shape }` to `specs` and gets a float32
   * placeholder of that shape (no data; it cannot be serialised). Reading a
   * name again with another shape is an error. See `recordParameters`.
   */
  static recording(specs: ParameterSpec[]): Weights {
    const refs = new Map<string, TensorRef>();
    return new Weights(
      {
        lookup: (name, shape) => {
          const seen = refs.get(name);
          if (seen !== undefined || shape === undefined) {
            if (seen !== undefined && shape !== undefined && !sameShape(seen.shape, shape)) {
              throw new GraphError(
                'PARAMETER_SHAPE',
                `parameter '${name}' is read as [${seen.shape.join(', ')}] and as [${shape.join(', ')}]`,
              );
            }
            return seen;
          }
          const ref = placeholder(name, shape);
          refs.set(name, ref);
          specs.push({ name, shape: [...shape] });
          return ref;
        },
        names: () => refs.keys(),
      },
      '',
    );
  }

  /** A view of the parameters under `module` (`blocks.3.attn`). */
  sub(module: string): Weights {
    return new Weights(this.source, `${this.prefix}${module}.`);
  }

  fullName(name: string): string {
    return `${this.prefix}${name}`;
  }

  has(name: string): boolean {
    return this.source.lookup(this.fullName(name), undefined) !== undefined;
  }

  /** The tensor named `name`; a missing one is an error naming the nearest names present. */
  get(name: string): TensorRef {
    return this.read(name, undefined);
  }

  /**
   * The tensor named `name` that a builder expects of `shape` (`Graph.param`
   * checks the shape; recording weights create a placeholder of it).
   */
  read(name: string, shape: readonly number[] | undefined): TensorRef {
    const full = this.fullName(name);
    const ref = this.source.lookup(full, shape);
    if (ref === undefined) {
      const near = nearestNames(full, [...this.source.names()], 3);
      const hint = near.length > 0 ? ` Nearest present: ${near.map((n) => `'${n}'`).join(', ')}.` : ' No parameters were given.';
      throw new GraphError('MISSING_PARAMETER', `missing parameter '${full}'.${hint}`);
    }
    return ref;
  }

  /** Names in this view, relative to it. */
  names(): string[] {
    const out: string[] = [];
    for (const k of this.source.names()) if (k.startsWith(this.prefix)) out.push(k.slice(this.prefix.length));
    return out.sort();
  }
}

function placeholder(name: string, shape: readonly number[]): TensorRef {
  return lazyTensor('float32', shape, () =>
    Promise.reject(new GraphError('BAD_ARGUMENT', `parameter '${name}' is a placeholder from recordParameters: it has no data`)),
  );
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
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
