/**
 * Resolving a source expression against a checkpoint's headers: the dtype
 * and shape of the result, computed without reading any data, and checked
 * (concatenated parts must agree, slices must fit). The result is a plan
 * that `load.ts` executes at save time.
 */
import { DTYPE_SIZE, type DType, type TensorInfo } from '@vlmkit/safetensors';
import { MappingError } from './errors.js';
import type { Source } from './source.js';

type Head = { readonly dtype: DType; readonly shape: readonly number[] };

export type Plan = Head &
  (
    | { readonly kind: 'tensor'; readonly info: TensorInfo }
    | { readonly kind: 'concat'; readonly parts: readonly Plan[]; readonly dim: number }
    | { readonly kind: 'stack'; readonly parts: readonly Plan[] }
    | { readonly kind: 'transpose'; readonly of: Plan }
    | { readonly kind: 'slice'; readonly of: Plan; readonly dim: number; readonly start: number; readonly end: number }
  );

export type Resolved =
  | { readonly ok: true; readonly plan: Plan; readonly used: readonly string[]; readonly fallback: boolean }
  | { readonly ok: false; readonly missing: readonly string[] };

/** Canonical name -> header entry, undefined when the checkpoint lacks it. */
export type Lookup = (canonical: string) => TensorInfo | undefined;

/**
 * Resolve `source` for the parameter `param` (used in messages). Missing
 * tensors are returned, not thrown: the caller reports all of them at once.
 * Parts that disagree throw MappingError (SHAPE_MISMATCH / DTYPE_MISMATCH).
 */
export function resolve(source: Source, lookup: Lookup, param: string): Resolved {
  switch (source.op) {
    case 'tensor': {
      const info = lookup(source.name);
      if (info === undefined) return { ok: false, missing: [source.name] };
      return { ok: true, plan: { kind: 'tensor', info, dtype: info.dtype, shape: info.shape }, used: [info.name], fallback: false };
    }
    case 'firstOf': {
      if (source.options.length === 0) throw new MappingError('BAD_TABLE', `parameter '${param}': firstOf needs at least one option.`);
      const tried = source.options.map((o) => resolve(o, lookup, param));
      const hit = tried.findIndex((r) => r.ok);
      // Report the names of the first (preferred) naming when none is complete.
      if (hit < 0) return tried[0]!;
      const r = tried[hit] as Extract<Resolved, { ok: true }>;
      return { ...r, fallback: r.fallback || hit > 0 };
    }
    case 'concat':
    case 'stack': {
      if (source.parts.length === 0) throw new MappingError('BAD_TABLE', `parameter '${param}': ${source.op} needs at least one part.`);
      const parts = source.parts.map((p) => resolve(p, lookup, param));
      const missing = parts.flatMap((p) => (p.ok ? [] : p.missing));
      if (missing.length > 0) return { ok: false, missing };
      const plans = parts.map((p) => (p as Extract<Resolved, { ok: true }>).plan);
      const used = parts.flatMap((p) => (p as Extract<Resolved, { ok: true }>).used);
      const fallback = parts.some((p) => p.ok && p.fallback);
      const plan = source.op === 'stack' ? stackPlan(plans, param) : concatPlan(plans, source.dim, param);
      return { ok: true, plan, used, fallback };
    }
    case 'transpose': {
      const r = resolve(source.of, lookup, param);
      if (!r.ok) return r;
      const of = r.plan;
      if (of.shape.length !== 2) {
        throw new MappingError(
          'SHAPE_MISMATCH',
          `parameter '${param}': expected a 2-D tensor to transpose, found ${describe(of)}.`,
          where(of),
        );
      }
      return { ...r, plan: { kind: 'transpose', of, dtype: of.dtype, shape: [of.shape[1]!, of.shape[0]!] } };
    }
    case 'slice': {
      const r = resolve(source.of, lookup, param);
      if (!r.ok) return r;
      const of = r.plan;
      const dim = normDim(source.dim, of.shape.length, param);
      const size = of.shape[dim]!;
      if (
        !(
          Number.isInteger(source.start) &&
          Number.isInteger(source.end) &&
          0 <= source.start &&
          source.start < source.end &&
          source.end <= size
        )
      ) {
        throw new MappingError(
          'SHAPE_MISMATCH',
          `parameter '${param}': expected indices [${source.start}, ${source.end}) of dim ${dim} to fit ${describe(of)}, whose dim ${dim} has ${size}.`,
          where(of),
        );
      }
      const shape = [...of.shape];
      if (source.squeeze) shape.splice(dim, 1);
      else shape[dim] = source.end - source.start;
      return { ...r, plan: { kind: 'slice', of, dim, start: source.start, end: source.end, dtype: of.dtype, shape } };
    }
  }
}

function concatPlan(parts: Plan[], dimIn: number, param: string): Plan {
  const first = parts[0]!;
  const dim = normDim(dimIn, first.shape.length, param);
  for (const p of parts.slice(1)) {
    sameDType(first, p, param);
    const agree = p.shape.length === first.shape.length && p.shape.every((d, i) => i === dim || d === first.shape[i]);
    if (!agree) {
      throw new MappingError(
        'SHAPE_MISMATCH',
        `parameter '${param}': expected parts concatenated along dim ${dim} to agree on every other dim, found ${describe(first)} and ${describe(p)}.`,
        where(p),
      );
    }
  }
  const shape = [...first.shape];
  shape[dim] = parts.reduce((a, p) => a + p.shape[dim]!, 0);
  return { kind: 'concat', parts, dim, dtype: first.dtype, shape };
}

function stackPlan(parts: Plan[], param: string): Plan {
  const first = parts[0]!;
  for (const p of parts.slice(1)) {
    sameDType(first, p, param);
    if (p.shape.length !== first.shape.length || p.shape.some((d, i) => d !== first.shape[i])) {
      throw new MappingError(
        'SHAPE_MISMATCH',
        `parameter '${param}': expected stacked parts of one shape, found ${describe(first)} and ${describe(p)}.`,
        where(p),
      );
    }
  }
  return { kind: 'stack', parts, dtype: first.dtype, shape: [parts.length, ...first.shape] };
}

function sameDType(a: Plan, b: Plan, param: string): void {
  if (a.dtype !== b.dtype) {
    throw new MappingError(
      'DTYPE_MISMATCH',
      `parameter '${param}': expected parts of one dtype (they are joined as raw elements, never converted), found ${describe(a)} and ${describe(b)}.`,
      where(b),
    );
  }
}

function normDim(dim: number, rank: number, param: string): number {
  const d = dim < 0 ? dim + rank : dim;
  if (!Number.isInteger(d) || d < 0 || d >= rank)
    throw new MappingError('BAD_TABLE', `parameter '${param}': dim ${dim} is out of range for rank ${rank}.`);
  return d;
}

/** The bytes a plan reads when they are one range of a stored tensor (one expert of a fused tensor, its gate rows): read in place. */
export function storedRange(plan: Plan): TensorInfo | undefined {
  if (plan.kind === 'tensor') return plan.info;
  const of = plan.kind === 'slice' ? storedRange(plan.of) : undefined;
  if (of === undefined || plan.kind !== 'slice' || plan.of.shape.slice(0, plan.dim).some((d) => d !== 1)) return undefined;
  const rowBytes = plan.of.shape.slice(plan.dim + 1).reduce((a, b) => a * b, DTYPE_SIZE[plan.dtype]);
  const byteOffset = of.byteOffset + plan.start * rowBytes;
  return { ...of, shape: [...plan.shape], byteOffset, byteLength: (plan.end - plan.start) * rowBytes };
}

/** The first checkpoint tensor a plan reads. */
export function firstTensor(plan: Plan): TensorInfo {
  switch (plan.kind) {
    case 'tensor':
      return plan.info;
    case 'concat':
    case 'stack':
      return firstTensor(plan.parts[0]!);
    case 'transpose':
    case 'slice':
      return firstTensor(plan.of);
  }
}

/** "'name' (file.safetensors) [a, b] F32", or for a computed part, its first tensor and the result. */
export function describe(plan: Plan): string {
  const t = firstTensor(plan);
  const head = `[${plan.shape.join(', ')}] ${plan.dtype}`;
  return plan.kind === 'tensor'
    ? `'${t.name}' (${fileName(t.file)}) ${head}`
    : `${plan.kind} of '${t.name}' (${fileName(t.file)}), ... ${head}`;
}

function where(plan: Plan): { file: string; tensor: string } {
  const t = firstTensor(plan);
  return { file: t.file, tensor: t.name };
}

/** The last part of a file's path or URL, for messages (a tensor's file may be a path, a URL or a picked file). */
export function fileName(path: string): string {
  return path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
}
