/**
 * Every checkpoint under the repo's test-fixtures/ (written by HF
 * transformers via tools/) opens and every tensor reads. A directory with a
 * *.safetensors.index.json is one checkpoint; other .safetensors files are
 * opened one by one (fixture dirs also hold inputs/expected-output files).
 * test-fixtures/hostile/ holds deliberately broken files (tools/hostile): not checkpoints.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Checkpoint, DTYPE_SIZE } from './index.js';

const root = fileURLToPath(new URL('../../../test-fixtures/', import.meta.url));

function findCheckpoints(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const entries = readdirSync(dir).sort();
  if (entries.some((e) => e.endsWith('.safetensors.index.json'))) return [dir];
  const found: string[] = [];
  for (const e of entries) {
    const path = join(dir, e);
    if (path === join(root, 'hostile')) continue;
    if (statSync(path).isDirectory()) found.push(...findCheckpoints(path));
    else if (e.endsWith('.safetensors')) found.push(path);
  }
  return found;
}

const checkpoints = findCheckpoints(root);

describe('test-fixtures/ checkpoints', () => {
  it('finds the fixture checkpoints (generate them with tools/fixtures if this fails)', () => {
    expect(existsSync(root), `${root} is missing`).toBe(true);
    expect(checkpoints.length).toBeGreaterThan(0);
  });
  it.each(checkpoints.map((p) => [relative(root, p), p]))('%s: every tensor reads', async (_label, path) => {
    const ckpt = await Checkpoint.open(path);
    try {
      expect(ckpt.names().length).toBeGreaterThan(0);
      for (const name of ckpt.names()) {
        const info = ckpt.info(name);
        const t = await ckpt.read(name);
        expect(t.shape).toEqual(info.shape);
        expect(t.data.length).toBe(info.shape.reduce((a, b) => a * b, 1));
        expect(t.data.byteLength).toBe(info.byteLength);
        expect(info.byteLength).toBe(t.data.length * DTYPE_SIZE[info.dtype]);
        if (['F64', 'F32', 'F16', 'BF16'].includes(info.dtype)) {
          expect((await ckpt.readFloat32(name)).length).toBe(t.data.length);
        }
      }
    } finally {
      await ckpt.close();
    }
  });
});
