// Tensor contracts: one schema of a graph's (or a model's) named tensors, from which the `g.input`
// declarations, the feed types, the feeds and the host-side checks all follow, so a name, dtype or
// symbolic dim is written once (vLLM's TensorSchema). Pure: no onnxruntime; the checks read any
// `{ dtype, dims }` tensor, so @vlmkit/runtime's HostTensor and ORT tensors both fit.
import type { DType } from './dtype.js';
import type { Graph } from './graph.js';
import type { Value } from './value.js';

/** A dtype chosen when the graph is built (`dtypes[var]`), one of `allowed`; tensors naming one variable share it. */
export interface DTypeVar<A extends DType = DType> {
  readonly var: string;
  readonly allowed: readonly A[];
}

export function dtypeVar<const A extends DType>(name: string, allowed: readonly A[]): DTypeVar<A> {
  return { var: name, allowed };
}

/** How one entry is declared and fed, besides its dtype and dims. */
export interface EntryOptions {
  /** May be absent: declared only when `include` asks, checked only when given. */
  readonly optional?: boolean;
  /** Counted: one tensor per index i < `counts[each]`, named by `name` with `{i}` replaced. */
  readonly each?: string;
  /** The name template of a counted entry (`deepstack_{i}`, `past_key_values.{i}.{part}`). */
  readonly name?: string;
  /** With `each`: per index one tensor per part (`{part}` in the name), fed as `{ [part]: T }`. */
  readonly parts?: readonly string[];
  /** What the tensor holds, as a missing-input message and the export manifest say it. */
  readonly doc?: string;
  /**
   * A layout the schema cannot state (one of several ranks) is checked by this function of the caller's;
   * the contract's check then only knows the name (and whether it is missing).
   */
  readonly checkedBy?: string;
}

/** Dims are sizes or symbols; a symbol has one size across every tensor of a check (or a `sizes` binding). */
export type ContractDims = readonly (number | string)[];
export type ContractEntry =
  | readonly [dtype: DType | DTypeVar, dims: ContractDims]
  | readonly [dtype: DType | DTypeVar, dims: ContractDims, options: EntryOptions];
export type Schema = { readonly [key: string]: ContractEntry };

type Opts<E> = E extends readonly [unknown, unknown, infer O] ? O : EntryOptions;
type IsOptional<E> = Opts<E> extends { optional: true } ? true : false;
type PartsOf<E> = Opts<E> extends { parts: readonly (infer P extends string)[] } ? P : never;
type OptionalKeys<S extends Schema> = { [K in keyof S]: IsOptional<S[K]> extends true ? K : never }[keyof S];
type RequiredKeys<S extends Schema> = Exclude<keyof S, OptionalKeys<S>>;

/** What one entry is fed (or declared) as: one tensor, or one per index (and part). */
export type EntryValue<E, T> =
  Opts<E> extends { each: string } ? ([PartsOf<E>] extends [never] ? readonly T[] : readonly { readonly [P in PartsOf<E>]: T }[]) : T;

/** The values `feeds(contract, values)` takes: one per entry, by key; optional entries may be left out. */
export type FeedValues<S extends Schema, T> = { readonly [K in RequiredKeys<S>]: EntryValue<S[K], T> } & {
  readonly [K in OptionalKeys<S>]?: EntryValue<S[K], T> | undefined;
};

/** The values `declareInputs` returns: optional entries are undefined (counted ones empty) when not included. */
export type DeclaredInputs<S extends Schema> = { readonly [K in RequiredKeys<S>]: EntryValue<S[K], Value> } & {
  readonly [K in OptionalKeys<S>]: Opts<S[K]> extends { each: string } ? EntryValue<S[K], Value> : Value | undefined;
};

type Fill<N extends string, P extends string> = N extends `${infer A}{i}${infer B}`
  ? `${A}${number}${Fill<B, P>}`
  : N extends `${infer A}{part}${infer B}`
    ? `${A}${P}${Fill<B, P>}`
    : N;
type EntryNames<K, E> =
  Opts<E> extends { each: string }
    ? Opts<E> extends { name: infer N extends string }
      ? Fill<N, PartsOf<E>>
      : `${K & string}_${number}`
    : K & string;
type NamesIn<S extends Schema, Ks extends keyof S> = { [K in Ks]: EntryNames<K, S[K]> }[Ks];

/** The feeds of one run by tensor name, as `feeds()` returns them. */
export type Feeds<S extends Schema, T> = Record<NamesIn<S, RequiredKeys<S>>, T> & Partial<Record<NamesIn<S, OptionalKeys<S>>, T>>;
/** Every tensor name a contract has (counted names as template literals: `deepstack_${number}`). */
export type TensorName<S extends Schema> = NamesIn<S, keyof S>;

/** Each entry's tensor name; a counted entry's is a function of the index (and part). */
export type ContractNames<S extends Schema> = {
  readonly [K in keyof S]: Opts<S[K]> extends { each: string }
    ? [PartsOf<S[K]>] extends [never]
      ? (i: number) => EntryNames<K, S[K]>
      : (i: number, part: PartsOf<S[K]>) => EntryNames<K, S[K]>
    : K;
};

export interface Contract<S extends Schema> {
  readonly schema: S;
  readonly names: ContractNames<S>;
  /** `feeds(this, values)` with the tensor type given: `DECODER.feeds<HostTensor>({ ... })`. */
  feeds<T>(values: FeedValues<S, T>): Feeds<S, T>;
}

/**
 * One schema of named tensors: `contract({ input_ids: ['int64', ['batch', 'seq']], ... })`. Keys are the
 * tensor names (a counted entry's key is its stem and `name` its template); entry order is declaration order.
 */
export function contract<const S extends Schema>(schema: S): Contract<S> {
  const names: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(schema)) {
    const o = entry[2] ?? {};
    if (o.each !== undefined) {
      const template = o.name ?? `${key}_{i}`;
      names[key] = (i: number, part?: string) => fill(template, i, part);
    } else names[key] = key;
  }
  const c: Contract<S> = { schema, names: names as ContractNames<S>, feeds: (values) => feeds(c, values) };
  return c;
}

/** `entry` without `optional`: for a graph that always declares what another graph may leave out. */
export function required<const E extends ContractEntry>(entry: E): readonly [E[0], E[1], Omit<Opts<E>, 'optional'>] {
  const { optional: _, ...rest } = entry[2] ?? {};
  return [entry[0], entry[1], rest as Omit<Opts<E>, 'optional'>] as const;
}

function fill(template: string, i: number, part: string | undefined): string {
  return template.replace('{i}', String(i)).replace('{part}', part ?? '');
}

/** How a contract is bound to one graph: sizes of symbols, counts of counted entries, dtype variables, optionals. */
export interface Binding<S extends Schema = Schema> {
  /** Symbols fixed to a size (`hidden: 1024`): declared as that number, checked against it. */
  readonly sizes?: Readonly<Record<string, number>>;
  /** How many tensors each counted entry has, by its `each` name (`layer: 28`). */
  readonly counts?: Readonly<Record<string, number>>;
  /** The dtype of each dtype variable. */
  readonly dtypes?: Readonly<Record<string, DType>>;
  /** Which optional entries the graph declares. */
  readonly include?: { readonly [K in OptionalKeys<S>]?: boolean | undefined };
}

/** One tensor of a bound contract: what a graph declares, a manifest lists and a check reads. */
export interface TensorSpec {
  readonly key: string;
  readonly name: string;
  readonly dtype: DType;
  readonly dims: readonly (number | string)[];
  readonly optional: boolean;
  readonly doc?: string;
}

export type ContractErrorCode = 'BAD_BINDING' | 'MISSING_INPUT' | 'UNKNOWN_INPUT' | 'DTYPE_MISMATCH' | 'RANK_MISMATCH' | 'DIM_MISMATCH';

/** A contract refused a binding or a set of tensors; `input` is the tensor at fault (the first one). */
export class ContractError extends Error {
  constructor(
    readonly code: ContractErrorCode,
    message: string,
    readonly input: string,
    readonly problems: readonly ContractProblem[] = [],
  ) {
    super(message);
    this.name = 'ContractError';
  }
}

/** The tensors a graph built with `binding` has, in declaration order (counted entries index-major, then part). */
export function tensorSpecs<S extends Schema>(c: Contract<S>, binding: Binding<S> = {}): TensorSpec[] {
  const out: TensorSpec[] = [];
  const include = (binding.include ?? {}) as Record<string, boolean | undefined>;
  for (const [key, [dt, dims, o = {}]] of Object.entries(c.schema)) {
    if (o.optional && !include[key]) continue;
    const dtype = bindDType(key, dt, binding.dtypes);
    const shape = dims.map((d) => (typeof d === 'string' && binding.sizes?.[d] !== undefined ? binding.sizes[d] : d));
    const spec = (name: string): TensorSpec => ({
      key,
      name,
      dtype,
      dims: shape,
      optional: o.optional === true,
      ...(o.doc ? { doc: o.doc } : {}),
    });
    if (o.each === undefined) {
      out.push(spec(key));
      continue;
    }
    const n = binding.counts?.[o.each];
    if (n === undefined) throw new ContractError('BAD_BINDING', `${key}: counts.${o.each} is not given (how many ${key} tensors)`, key);
    const names = (c.names as Record<string, (i: number, part?: string) => string>)[key]!;
    for (let i = 0; i < n; i++) for (const part of o.parts ?? [undefined]) out.push(spec(names(i, part)));
  }
  return out;
}

function bindDType(key: string, dt: DType | DTypeVar, dtypes: Binding['dtypes']): DType {
  if (typeof dt === 'string') return dt;
  const chosen = dtypes?.[dt.var];
  if (chosen === undefined || !dt.allowed.includes(chosen))
    throw new ContractError('BAD_BINDING', `${key}: dtypes.${dt.var} must be one of ${dt.allowed.join(', ')}, got ${chosen}`, key);
  return chosen;
}

const DECLARED = new WeakMap<Graph, TensorSpec[]>();

/** Declares `specs` as `g`'s inputs (`g.input`, in order) and records them for `declaredTensors`. */
export function declareTensors(g: Graph, specs: readonly TensorSpec[]): Value[] {
  const list = DECLARED.get(g) ?? [];
  DECLARED.set(g, list);
  return specs.map((s) => {
    list.push(s);
    return g.input(s.name, s.dtype, s.dims);
  });
}

/**
 * The inputs contracts declared on `g` (`declareInputs`, `declareTensors`), in order, with their docs: a manifest's
 * inputs. Each in the dtype the graph has it in now (`floatConvertPass` retypes a KV cache input).
 */
export function declaredTensors(g: Graph): readonly TensorSpec[] {
  return (DECLARED.get(g) ?? []).map((t) => {
    const now = g.typeOf(t.name)?.dtype;
    return now === undefined || now === t.dtype ? t : { ...t, dtype: now };
  });
}

/**
 * Declares the contract's tensors as `g`'s inputs (`g.input`, in schema order) and returns them by key:
 * one Value, an array for a counted entry (of `{ [part]: Value }` with parts), undefined for an optional
 * entry not included.
 */
export function declareInputs<S extends Schema>(g: Graph, c: Contract<S>, binding: Binding<S> = {}): DeclaredInputs<S> {
  const out: Record<string, unknown> = {};
  const specs = tensorSpecs(c, binding);
  const values = declareTensors(g, specs);
  for (const [key, [, , o = {}]] of Object.entries(c.schema)) {
    const mine = values.filter((_, i) => specs[i]!.key === key);
    if (o.each === undefined) {
      out[key] = mine[0];
      continue;
    }
    const parts = o.parts;
    out[key] =
      parts === undefined
        ? mine
        : Array.from({ length: mine.length / parts.length }, (_, i) =>
            Object.fromEntries(parts.map((p, j) => [p, mine[i * parts.length + j]])),
          );
  }
  return out as DeclaredInputs<S>;
}

/** The feeds of one run by tensor name, from the values by key; generic over the tensor type. */
export function feeds<S extends Schema, T>(c: Contract<S>, values: FeedValues<S, T>): Feeds<S, T> {
  const out: Record<string, T> = {};
  const given = values as Record<string, unknown>;
  for (const [key, [, , o = {}]] of Object.entries(c.schema)) {
    const v = given[key];
    if (v === undefined) continue;
    if (o.each === undefined) {
      out[key] = v as T;
      continue;
    }
    const names = (c.names as Record<string, (i: number, part?: string) => string>)[key]!;
    (v as readonly unknown[]).forEach((x, i) => {
      if (o.parts === undefined) out[names(i)] = x as T;
      else for (const p of o.parts) out[names(i, p)] = (x as Record<string, T>)[p]!;
    });
  }
  return out as Feeds<S, T>;
}

/** What a check reads of a tensor: any host or ORT tensor has these. */
export interface TensorLike {
  readonly dtype: string;
  readonly dims: readonly number[];
}

export interface ContractProblem {
  readonly code: Exclude<ContractErrorCode, 'BAD_BINDING'>;
  readonly input: string;
  readonly message: string;
}

/**
 * Everything wrong with `tensors` for the contract, in schema order after unknown names: a required tensor
 * missing, a name the contract does not have, a dtype, rank or size other than the schema's, and a symbol
 * with two sizes (`batch` 2 in `input_ids` but 1 in `attention_mask`). A symbol takes its size from
 * `binding.sizes`, else from the first tensor that has it. Counted entries: the indices given, or exactly
 * `counts[each]` of them when the binding counts them.
 */
export function contractProblems<S extends Schema>(
  c: Contract<S>,
  tensors: Readonly<Record<string, TensorLike | undefined>>,
  binding: Omit<Binding<S>, 'include'> = {},
): ContractProblem[] {
  const problems: ContractProblem[] = [];
  const matchers = Object.entries(c.schema).map(([key, entry]) => ({ key, entry, re: nameMatcher(key, entry) }));
  for (const [name, t] of Object.entries(tensors)) {
    if (t !== undefined && !matchers.some((m) => m.re.test(name)))
      problems.push({ code: 'UNKNOWN_INPUT', input: name, message: `${name} is not an input: expected some of ${allNames(c).join(', ')}` });
  }
  const bound = new Map<string, { size: number; by: string; dims: ContractDims }>();
  for (const [sym, size] of Object.entries(binding.sizes ?? {})) bound.set(sym, { size, by: '', dims: [] });
  const dtypeBy = new Map<string, { dtype: string; by: string }>();
  for (const [key, dt] of Object.entries(binding.dtypes ?? {})) dtypeBy.set(key, { dtype: dt, by: '' });
  for (const { key, entry, re } of matchers) {
    const [dt, dims, o = {}] = entry;
    const present = Object.keys(tensors).filter((n) => tensors[n] !== undefined && re.test(n));
    const want = o.each !== undefined ? binding.counts?.[o.each] : undefined;
    const names = o.each === undefined ? [key] : want !== undefined ? expectedNames(c, key, want, o.parts) : present;
    for (const name of names) {
      const t = tensors[name];
      if (t === undefined) {
        if (!o.optional) {
          const what = o.doc ? `${o.doc}, ` : '';
          problems.push({ code: 'MISSING_INPUT', input: name, message: `${name} is missing: ${what}${describeDType(dt)} ${show(dims)}` });
        }
        continue;
      }
      if (o.checkedBy !== undefined) continue;
      const p = tensorProblem(name, t, dt, dims, bound, dtypeBy);
      if (p) problems.push(p);
    }
    if (want !== undefined) {
      for (const name of present.filter((n) => !names.includes(n)))
        problems.push({ code: 'UNKNOWN_INPUT', input: name, message: `${name} is not an input: ${key} has ${want} (${names.join(', ')})` });
    }
  }
  return problems;
}

/** `contractProblems`, thrown as one ContractError naming the first tensor at fault (and listing all). */
export function checkTensors<S extends Schema>(
  c: Contract<S>,
  tensors: Readonly<Record<string, TensorLike | undefined>>,
  binding: Omit<Binding<S>, 'include'> = {},
): void {
  const problems = contractProblems(c, tensors, binding);
  const first = problems[0];
  if (first) throw new ContractError(first.code, problems.map((p) => p.message).join('; '), first.input, problems);
}

function tensorProblem(
  name: string,
  t: TensorLike,
  dt: DType | DTypeVar,
  dims: ContractDims,
  bound: Map<string, { size: number; by: string; dims: ContractDims }>,
  dtypeBy: Map<string, { dtype: string; by: string }>,
): ContractProblem | undefined {
  // The expected shape with every symbol known so far replaced by its size.
  const expected = dims.map((d) => (typeof d === 'string' && bound.has(d) ? bound.get(d)!.size : d));
  // The tensors that fixed this one's symbols, once each.
  const owners = [
    ...new Map(
      dims.flatMap((d) => (typeof d === 'string' && bound.get(d)?.by ? [[bound.get(d)!.by, bound.get(d)!] as const] : [])),
    ).values(),
  ];
  // "(the shape of input_ids)" when this tensor's dims are another's; else which tensor fixed which symbol.
  const origin =
    owners.length === 1 && sameDims(owners[0]!.dims, dims)
      ? ` (the shape of ${owners[0]!.by})`
      : owners.length > 0
        ? ` (${dims.filter((d) => typeof d === 'string' && bound.get(d)?.by).join(', ')} as in ${owners.map((o) => o.by).join(', ')})`
        : '';
  const dtypeOk = typeof dt === 'string' ? t.dtype === dt : dt.allowed.some((a) => a === t.dtype) && sameVar(dt, t.dtype, dtypeBy);
  const wantDType = typeof dt === 'string' ? dt : (dtypeBy.get(dt.var)?.dtype ?? describeDType(dt));
  const fail = (code: ContractProblem['code']): ContractProblem => ({
    code,
    input: name,
    message: `${name} must be ${wantDType} ${show(expected)}${origin}, got ${t.dtype} ${show(t.dims)}`,
  });
  if (!dtypeOk) return fail('DTYPE_MISMATCH');
  if (t.dims.length !== dims.length) return fail('RANK_MISMATCH');
  if (t.dims.some((d, i) => typeof expected[i] === 'number' && d !== expected[i])) return fail('DIM_MISMATCH');
  dims.forEach((d, i) => {
    if (typeof d === 'string' && !bound.has(d)) bound.set(d, { size: t.dims[i]!, by: name, dims });
  });
  if (typeof dt !== 'string' && !dtypeBy.has(dt.var)) dtypeBy.set(dt.var, { dtype: t.dtype, by: name });
  return undefined;
}

function sameVar(dt: DTypeVar, got: string, dtypeBy: Map<string, { dtype: string; by: string }>): boolean {
  const first = dtypeBy.get(dt.var);
  return first === undefined || first.dtype === got;
}

function sameDims(a: ContractDims, b: ContractDims): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

function describeDType(dt: DType | DTypeVar): string {
  return typeof dt === 'string' ? dt : dt.allowed.join('|');
}

function show(dims: readonly (number | string)[]): string {
  return `[${dims.join(', ')}]`;
}

function nameMatcher(key: string, [, , o = {}]: ContractEntry): RegExp {
  if (o.each === undefined) return new RegExp(`^${escapeRe(key)}$`);
  const template = o.name ?? `${key}_{i}`;
  const parts = o.parts ? `(${o.parts.map(escapeRe).join('|')})` : '';
  return new RegExp(`^${escapeRe(template).replace('\\{i\\}', '(0|[1-9][0-9]*)').replace('\\{part\\}', parts)}$`);
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function expectedNames<S extends Schema>(c: Contract<S>, key: string, n: number, parts: readonly string[] | undefined): string[] {
  const names = (c.names as Record<string, (i: number, part?: string) => string>)[key]!;
  return Array.from({ length: n }, (_, i) => (parts ?? [undefined]).map((p) => names(i, p))).flat();
}

function allNames<S extends Schema>(c: Contract<S>): string[] {
  return Object.entries(c.schema).map(([key, [, , o = {}]]) => (o.each === undefined ? key : (o.name ?? `${key}_{i}`)));
}
