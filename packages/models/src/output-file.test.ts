// outputFile / outputDir (issue 16, findings 1 and 2, as the library sees them): what a command writes never
// replaces what it reads, a special file or a link, checked before the work and again just before the rename.
import { execFileSync } from 'node:child_process';
import { cp, link, lstat, mkdir, mkdtemp, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { int64 } from '@vlmkit/runtime';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ModelError } from './errors.js';
import { exportModel } from './export.node.js';
import { FIXTURE_DIR } from './fixture-dir.node.js';
import { writeNamedTensors } from './inputs-file.node.js';
import { outputDir, outputFile } from './output-file.node.js';

let work: string;
let model: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'vlmkit-output-'));
  model = join(work, 'model');
  await mkdir(model);
  await writeFile(join(model, 'config.json'), '{}');
  await writeFile(join(model, 'model.safetensors'), 'weights');
});

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined as unknown as ModelError,
    (e: unknown) => e as ModelError,
  );

describe('outputFile', () => {
  it('refuses a path inside a directory read, a hard link to a file read, a link, a FIFO and a directory', async () => {
    const hard = join(work, 'hard');
    await link(join(model, 'model.safetensors'), hard);
    const soft = join(work, 'soft');
    await symlink(join(work, 'elsewhere'), soft);
    const fifo = join(work, 'fifo');
    execFileSync('mkfifo', [fifo]);
    for (const [path, code, why] of [
      [join(model, 'model.safetensors'), 'OUTPUT_WOULD_OVERWRITE_INPUT', /is inside .*model, which this command reads/],
      [join(model, 'new.safetensors'), 'OUTPUT_WOULD_OVERWRITE_INPUT', /is inside/],
      [hard, 'OUTPUT_WOULD_OVERWRITE_INPUT', /is the same file as .*model \(model\.safetensors\)/],
      [soft, 'OUTPUT_NOT_REGULAR_FILE', /is a symbolic link: outputs are never written through one/],
      [fifo, 'OUTPUT_NOT_REGULAR_FILE', /is a FIFO \(named pipe\): outputs are written only to regular files/],
      [model, 'OUTPUT_WOULD_OVERWRITE_INPUT', /is inside/],
      [work, 'OUTPUT_NOT_REGULAR_FILE', /is a directory/],
      [join(work, 'missing', 'x'), 'OUTPUT_NOT_DIRECTORY', /its directory cannot be used/],
    ] as const) {
      const e = await failure(outputFile(path, [model]));
      expect([path, e?.code]).toEqual([path, code]);
      expect(e.message).toMatch(why);
    }
  });

  it('checks the target again just before the rename: a link put there meanwhile is refused, the temporary file removed', async () => {
    const dir = await mkdtemp(join(work, 'race-'));
    const target = join(dir, 'out.safetensors');
    const file = await outputFile(target, [model]);
    const e = await failure(
      file.write(async (tmp) => {
        await writeFile(tmp, 'new');
        await symlink(join(model, 'model.safetensors'), target);
      }),
    );
    expect(e.code).toBe('OUTPUT_NOT_REGULAR_FILE');
    expect((await lstat(target)).isSymbolicLink()).toBe(true);
    expect(await readdir(dir)).toEqual(['out.safetensors']);
    expect(await readFile(join(model, 'model.safetensors'), 'utf8')).toBe('weights');
  });

  it('writeNamedTensors with a plain path refuses a symbolic link too', async () => {
    const soft = join(work, 'to-weights');
    await symlink(join(model, 'model.safetensors'), soft);
    const e = await failure(writeNamedTensors(soft, { x: int64([1], [1]) }));
    expect(e.code).toBe('OUTPUT_NOT_REGULAR_FILE');
    expect(await readFile(join(model, 'model.safetensors'), 'utf8')).toBe('weights');
  });
});

describe('outputDir and exportModel', () => {
  it('refuses a directory inside or holding one read, and an output file that links to one read', async () => {
    expect((await failure(outputDir(join(model, 'onnx'), [model], []))).code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
    expect((await failure(outputDir(work, [model], []))).code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
    expect(await readdir(model)).not.toContain('onnx');
    const out = await mkdtemp(join(work, 'out-'));
    await link(join(model, 'model.safetensors'), join(out, 'decoder.onnx.data'));
    expect((await failure(outputDir(out, [model], ['decoder.onnx.data']))).code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
  });

  it('exportModel refuses the checkpoint directory as its output and leaves every byte of it', async () => {
    const ernie = join(work, 'ernie-tiny');
    await cp(join(FIXTURE_DIR, 'ernie-tiny'), ernie, { recursive: true });
    const before = await readFile(join(ernie, 'model.safetensors'));
    const names = await readdir(ernie);
    for (const out of [ernie, join(ernie, 'onnx')]) {
      expect((await failure(exportModel(ernie, out))).code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
    }
    expect(await readdir(ernie)).toEqual(names);
    expect((await readFile(join(ernie, 'model.safetensors'))).equals(before)).toBe(true);
  });
});
