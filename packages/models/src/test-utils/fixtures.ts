import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatMessage } from '@vlmkit/processors';

import { FIXTURE_DIR as FIXTURES } from '../fixture-dir.node.js';

export { FIXTURES };

export interface FixtureCase {
  name: string;
  dir: string;
  checkpoint: string;
  json: Record<string, unknown>;
}

/** Every case under test-fixtures/<model>/cases, with its checkpoint directory. */
export function fixtureCases(model: string): FixtureCase[] {
  const root = join(FIXTURES, model, 'cases');
  if (!existsSync(root)) throw new Error(`test fixtures missing: ${root} (generate them with tools/fixtures/make_fixtures.py)`);
  const cases = readdirSync(root)
    .sort()
    .map((name) => {
      const dir = join(root, name);
      const json = JSON.parse(readFileSync(join(dir, 'case.json'), 'utf8')) as Record<string, unknown>;
      return { name, dir, checkpoint: join(FIXTURES, String(json.checkpoint)), json };
    });
  if (cases.length === 0) throw new Error(`test fixtures missing: no cases under ${root}`);
  return cases;
}

export { readNamedTensors as readTensors } from '../inputs-file.node.js';

/** The processor fixtures (test-fixtures/processors): images and per-family chat cases. */
export const PROCESSORS = join(FIXTURES, 'processors');

/** A processor fixture case's messages (test-fixtures/processors/<family>/cases/<name>), its image paths made absolute. */
export function caseMessages(family: string, name: string): ChatMessage[] {
  const json = JSON.parse(readFileSync(join(PROCESSORS, family, 'cases', name, 'case.json'), 'utf8')) as { messages: ChatMessage[] };
  return json.messages.map((m) =>
    typeof m.content === 'string'
      ? m
      : { ...m, content: m.content.map((p) => (typeof p.path === 'string' ? { ...p, path: join(PROCESSORS, p.path) } : p)) },
  );
}

/** max |a - b| / max |b| over the entries `keep` selects. */
export function relError(a: ArrayLike<number>, b: ArrayLike<number>, keep: (i: number) => boolean = () => true): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    if (!keep(i)) continue;
    diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return diff / scale;
}

/** mean |a - b| / mean |b| over the entries `keep` selects. */
export function meanRel(a: ArrayLike<number>, b: ArrayLike<number>, keep: (i: number) => boolean = () => true): number {
  let [diff, scale] = [0, 0];
  for (let i = 0; i < a.length; i++) {
    if (!keep(i)) continue;
    diff += Math.abs(a[i]! - b[i]!);
    scale += Math.abs(b[i]!);
  }
  return diff / scale;
}

/**
 * Two [B, S, V] logits: the lowest cosine between rows' last-position logits, and the share of the positions
 * `real` keeps (index b * S + s; default all) whose argmax agrees.
 */
export function agreement(
  a: Float32Array,
  b: Float32Array,
  [B, S, V]: readonly number[],
  real: (position: number) => boolean = () => true,
): { cosine: number; top1: number } {
  const argmax = (d: Float32Array, base: number) => {
    let best = 0;
    for (let v = 1; v < V!; v++) if (d[base + v]! > d[base + best]!) best = v;
    return best;
  };
  let [cosine, same, positions] = [1, 0, 0];
  for (let r = 0; r < B!; r++) {
    for (let s = 0; s < S!; s++) {
      if (!real(r * S! + s)) continue;
      positions++;
      if (argmax(a, (r * S! + s) * V!) === argmax(b, (r * S! + s) * V!)) same++;
    }
    const base = (r * S! + S! - 1) * V!;
    let [dot, na, nb] = [0, 0, 0];
    for (let v = 0; v < V!; v++) {
      dot += a[base + v]! * b[base + v]!;
      na += a[base + v]! ** 2;
      nb += b[base + v]! ** 2;
    }
    cosine = Math.min(cosine, dot / Math.sqrt(na * nb));
  }
  return { cosine, top1: same / positions };
}
