import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { FIXTURE_DIR as FIXTURES } from '../fixture-dir.js';

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

export { readNamedTensors as readTensors } from '../inputs-file.js';

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
