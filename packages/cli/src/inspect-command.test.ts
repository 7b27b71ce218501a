// `vlmkit inspect` on a checkpoint folder holding more than its weights: the files transformers reads are
// checked, the others listed as not read (no unmapped tensors, exit 0); without model.safetensors, exit 1 naming
// what was found.
import { copyFile, mkdtemp, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURE_DIR } from '@vlmkit/models';
import { describe, expect, it } from 'vitest';
import { main } from './main.js';

const ERNIE = join(FIXTURE_DIR, 'ernie-tiny');

/** The tiny ERNIE's config and weights, with HF's expected outputs of one case dumped beside them. */
async function withReferenceDump(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vlmkit-cli-inspect-files-'));
  for (const f of ['config.json', 'generation_config.json', 'model.safetensors']) await copyFile(join(ERNIE, f), join(dir, f));
  await copyFile(join(ERNIE, 'cases', 'images', 'expected.safetensors'), join(dir, 'reference.safetensors'));
  return dir;
}

async function inspect(dir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(
    ['inspect', '--model', dir],
    (s) => {
      stdout += s;
    },
    {
      err: (s) => {
        stderr += s;
      },
    },
  );
  return { code, stdout, stderr };
}

describe('vlmkit inspect and the files beside the weights', () => {
  it('a reference dump beside model.safetensors: not read, no unmapped tensor, exit 0', async () => {
    const dir = await withReferenceDump();
    const r = await inspect(dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`\n  file ${join(dir, 'model.safetensors')}: `);
    expect(r.stdout).toContain(`\n  file ${join(dir, 'reference.safetensors')}: not read (not a weight file of this checkpoint)\n`);
    expect(r.stdout).toMatch(/\ntensors: \d+ mapped, \d+ ignored, 0 unused, 0 parameters missing, 0 mismatched\nok\n$/);
    expect(r.stderr).toBe('');
  });

  it('no model.safetensors: exit 1, NO_MODEL_SAFETENSORS naming the files found', async () => {
    const dir = await withReferenceDump();
    await rename(join(dir, 'model.safetensors'), join(dir, 'ernie.safetensors'));
    const r = await inspect(dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^vlmkit: \\[NO_MODEL_SAFETENSORS\\] ${dir}: .*found only 'ernie\\.safetensors', 'reference\\.safetensors', which are not read`,
      ),
    );
  });
});
