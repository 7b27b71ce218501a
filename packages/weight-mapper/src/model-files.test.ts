// A checkpoint opened in the browser way (Checkpoint.fromFiles over picked files, no paths) maps to the same
// parameters as by path: tensors referenced in place become `source` refs (read through the file's
// ByteSource) instead of `file` refs (read by path), with the same bytes; computed ones stay lazy.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { blobFiles, Checkpoint } from '@vlmkit/safetensors';
import { expect, it } from 'vitest';
import { mapErnie45VL } from './ernie45-vl.js';
import { mapGranite4Vision } from './granite4-vision.js';
import { refBytes } from './test-utils/temp.js';
import { ernieTinyComponents, graniteTinyComponents } from './test-utils/tiny-components.js';

const fixtures = fileURLToPath(new URL('../../../test-fixtures/', import.meta.url));

/** The fixture's top-level files as a name -> Blob map, as a page would hold picked files. */
const picked = (dir: string) =>
  blobFiles(
    Object.fromEntries(
      readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => [e.name, new Blob([readFileSync(join(dir, e.name))])]),
    ),
    dir,
  );

it.each([
  ['ernie-tiny', (c: Checkpoint) => mapErnie45VL(c, ernieTinyComponents())],
  ['granite-tiny', (c: Checkpoint) => mapGranite4Vision(c, graniteTinyComponents())],
] as const)('%s: every parameter mapped from picked files has the bytes mapped by path; in-place ones read through the source', async (which, map) => {
  const dir = join(fixtures, which);
  const byPath = await Checkpoint.open(dir);
  const byFiles = await Checkpoint.fromFiles(picked(dir));
  const a = (await map(byPath)) as unknown as Record<string, { names(): Iterable<string>; get(n: string): Parameters<typeof refBytes>[0] }>;
  const b = (await map(byFiles)) as unknown as typeof a;
  const kinds = new Set<string>();
  for (const component of Object.keys(a).filter((k) => k !== 'report')) {
    const names = [...a[component]!.names()];
    expect([...b[component]!.names()], component).toEqual(names);
    for (const name of names) {
      const [ra, rb] = [a[component]!.get(name), b[component]!.get(name)];
      expect(rb.kind, name).toBe(ra.kind === 'file' ? 'source' : ra.kind);
      kinds.add(`${ra.kind}->${rb.kind}`);
      expect(Buffer.compare(await refBytes(rb), await refBytes(ra)), `${component} ${name}`).toBe(0);
    }
  }
  expect([...kinds].sort()).toEqual(['file->source', 'lazy->lazy']);
  await byPath.close();
  await byFiles.close();
});
