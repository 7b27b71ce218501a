/**
 * Source expressions: how one component parameter is made from checkpoint
 * tensors (named by their canonical names, after the table's renames).
 * A bare `tensor` is used unchanged (zero copy); every other form is
 * computed from raw elements when the model is saved, in the source dtype.
 */
export type Source =
  | { readonly op: 'tensor'; readonly name: string }
  | { readonly op: 'firstOf'; readonly options: readonly Source[] }
  | { readonly op: 'concat'; readonly parts: readonly Source[]; readonly dim: number }
  | { readonly op: 'stack'; readonly parts: readonly Source[] }
  | { readonly op: 'transpose'; readonly of: Source }
  | {
      readonly op: 'slice';
      readonly of: Source;
      readonly dim: number;
      readonly start: number;
      readonly end: number;
      readonly squeeze: boolean;
    };

/** A checkpoint tensor, used as is. */
export const tensor = (name: string): Source => ({ op: 'tensor', name });

/** The first option whose tensors are all present (alternative namings, tied weights). */
export const firstOf = (...options: Source[]): Source => ({ op: 'firstOf', options });

/** Concatenation along `dim` (every other dim must agree). */
export const concat = (parts: readonly Source[], dim = 0): Source => ({ op: 'concat', parts, dim });

/** A packed module, vLLM style: q/k/v -> qkv_proj, gate/up -> gate_up_proj (rows of each part in order). */
export const pack = (...names: string[]): Source => concat(names.map(tensor), 0);

/** A new leading dim: per-expert [a, b] tensors -> [E, a, b]. */
export const stack = (parts: readonly Source[]): Source => ({ op: 'stack', parts });

/** The two dims of a 2-D tensor swapped ([D, E] -> [E, D]). */
export const transpose = (of: Source): Source => ({ op: 'transpose', of });

/** Indices [start, end) along `dim`. */
export const slice = (of: Source, dim: number, start: number, end: number): Source => ({
  op: 'slice',
  of,
  dim,
  start,
  end,
  squeeze: false,
});

/** Row `index` of dim 0, the dim dropped: [2, E] -> [E]. */
export const row = (of: Source, index: number): Source => ({ op: 'slice', of, dim: 0, start: index, end: index + 1, squeeze: true });

/** `from, from+1, ..., to-1`. */
export function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}

/** Per-expert tensors stacked for experts `indices` (`name(j)` gives expert j's source). */
export const stackExperts = (indices: readonly number[], source: (j: number) => Source): Source => stack(indices.map(source));

/** Every checkpoint tensor name an expression refers to (all options of a firstOf). */
export function sourceNames(s: Source): string[] {
  switch (s.op) {
    case 'tensor':
      return [s.name];
    case 'firstOf':
      return s.options.flatMap(sourceNames);
    case 'concat':
    case 'stack':
      return s.parts.flatMap(sourceNames);
    case 'transpose':
    case 'slice':
      return sourceNames(s.of);
  }
}
