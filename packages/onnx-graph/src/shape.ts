/** A dimension: a known size, or a symbolic name (`batch`, `seq`, `S*4`). */
export type Dim = number | string;
export type Shape = readonly Dim[];

export function isStatic(shape: Shape): shape is readonly number[] {
  return shape.every((d) => typeof d === 'number');
}

export function formatShape(shape: Shape): string {
  return `[${shape.join(', ')}]`;
}

/** Product of dims; symbolic when any factor is. */
export function dimProduct(dims: Shape): Dim {
  let known = 1;
  const names: string[] = [];
  for (const d of dims) {
    if (typeof d === 'number') known *= d;
    else names.push(d);
  }
  if (names.length === 0) return known;
  if (known === 0) return 0;
  return known === 1 ? names.join('*') : [String(known), ...names].join('*');
}

/** True when two dims cannot be shown to differ. */
export function dimsCompatible(a: Dim, b: Dim): boolean {
  return typeof a === 'string' || typeof b === 'string' || a === b;
}

/** numpy broadcasting; returns undefined when two known dims conflict. */
export function broadcastShapes(a: Shape, b: Shape): Dim[] | undefined {
  const rank = Math.max(a.length, b.length);
  const out: Dim[] = [];
  for (let i = 0; i < rank; i++) {
    const da = i < rank - a.length ? 1 : a[i - (rank - a.length)]!;
    const db = i < rank - b.length ? 1 : b[i - (rank - b.length)]!;
    if (da === 1) out.push(db);
    else if (db === 1) out.push(da);
    else if (typeof da === 'number' && typeof db === 'number') {
      if (da !== db) return undefined;
      out.push(da);
    } else if (typeof da === 'number') out.push(da);
    else out.push(db);
  }
  return out;
}

/** Normalises a possibly negative axis, or returns undefined when out of range. */
export function normAxis(axis: number, rank: number): number | undefined {
  const a = axis < 0 ? axis + rank : axis;
  return a >= 0 && a < rank ? a : undefined;
}
