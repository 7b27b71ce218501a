/**
 * docs/parameter-names.md is generated from the builders' dry runs and the
 * mapper's rules; this fails when the checked-in file differs from what they
 * give now. `pnpm docs:params` (VLMKIT_WRITE_PARAMETER_DOCS=1) rewrites it.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { PARAMETER_DOCS_PATH, parameterDocs } from './parameter-docs.js';

const file = fileURLToPath(new URL(`../../../${PARAMETER_DOCS_PATH}`, import.meta.url));
// Dry runs of the 28B and 3B builders: a few seconds, so once.
const text = parameterDocs();

it(`${PARAMETER_DOCS_PATH} is what the builders and the mapper give`, async () => {
  if (process.env.VLMKIT_WRITE_PARAMETER_DOCS === '1') await writeFile(file, text);
  const onDisk = await readFile(file, 'utf8');
  if (onDisk !== text) expect.fail(`${PARAMETER_DOCS_PATH} is out of date: run pnpm docs:params`);
});

it('the generated lists are the dry runs: a tied head is not listed, per-expert rows carry the vision offset', () => {
  expect(text.split('## Qwen3-VL-MoE')[0]).not.toContain('| `lm_head.weight`');
  expect(text).toContain(
    '| `layers.{i}.mlp.vision_experts.{e}.up_proj.weight` | `[512, 2560]` | `model.layers.{i}.mlp.experts.{j}.up_proj.weight` | i = 1..27, e = 0..63, j = 64..127 |',
  );
});
