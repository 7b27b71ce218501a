// Issue 16, data loss: `--out` must never replace what the command reads (the model's files, the inputs, the
// images, the adapter, the graph cache), a special file or a directory, nor write through a symbolic link. Each
// case runs the real command on copies of the tiny checkpoints and checks that a typed error comes back before
// anything is written, and that every byte of the copies is unchanged.
import { execFileSync } from 'node:child_process';
import { copyFile, link, lstat, mkdir, mkdtemp, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { FIXTURE_DIR, type ModelError } from '@vlmkit/models';
import { beforeAll, describe, expect, it } from 'vitest';
import { main } from './main.js';
import { copyFixture, runBin, STACK_LINE, snapshot } from './test-utils/cli-process.js';

const IMAGE = join(FIXTURE_DIR, 'processors', 'images', 'tiny.png');
const quiet = () => {};

let work: string;
let cacheDir: string;
let ernie: string;
let granite: string;
let lora: string;
let before: Record<string, Record<string, string>>;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'vlmkit-hostile-out-'));
  cacheDir = join(work, 'cache');
  await mkdir(cacheDir);
  ernie = await copyFixture('ernie-tiny');
  granite = await copyFixture('granite-tiny');
  lora = await copyFixture('granite-tiny-lora');
  before = { ernie: await snapshot(ernie), granite: await snapshot(granite), lora: await snapshot(lora) };
});

/** The command's failure (main throws what the bin prints as `vlmkit: [CODE] message`); fails the test on exit 0. */
async function refused(argv: string[]): Promise<ModelError> {
  const r = await main(argv, quiet, { err: quiet }).then(
    (code) => ({ code }),
    (e: unknown) => ({ error: e as ModelError }),
  );
  expect(r, `${argv.join(' ')} was not refused`).toHaveProperty('error');
  return (r as { error: ModelError }).error;
}

async function unchanged(): Promise<void> {
  expect(await snapshot(ernie)).toEqual(before.ernie);
  expect(await snapshot(granite)).toEqual(before.granite);
  expect(await snapshot(lora)).toEqual(before.lora);
}

const preprocess = (out: string, model = ernie) => ['preprocess', '--model', model, '--image', IMAGE, '--prompt', 'hi', '--out', out];
const forward = (out: string, inputs = join(ernie, 'cases', 'images', 'inputs.safetensors')) => [
  'forward',
  '--model',
  ernie,
  '--inputs',
  inputs,
  '--out',
  out,
  '--device',
  'cpu',
  '--cache-dir',
  cacheDir,
];
const generate = (out: string, extra: string[] = []) => [
  'generate',
  '--model',
  granite,
  '--inputs',
  join(granite, 'cases', 'multi-image', 'inputs.safetensors'),
  '--max-new-tokens',
  '2',
  '--out',
  out,
  '--device',
  'cpu',
  '--cache-dir',
  cacheDir,
  ...extra,
];

describe('finding 1: --out never replaces a file the command reads', () => {
  it('finding 1: preprocess, forward and generate refuse --out MODEL/model.safetensors and MODEL/tokenizer.json', async () => {
    for (const argv of [
      preprocess(join(ernie, 'model.safetensors')),
      forward(join(ernie, 'model.safetensors')),
      generate(join(granite, 'model.safetensors')),
      generate(join(granite, 'tokenizer.json')),
      preprocess(join(ernie, 'tokenizer.json')),
    ]) {
      const e = await refused(argv);
      expect(e.code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
      expect(e.message).toMatch(/which this command reads/);
    }
    await unchanged();
  });

  it('finding 1: a new file inside the model directory, the adapter or the graph cache is refused too', async () => {
    for (const argv of [
      preprocess(join(ernie, 'inputs.safetensors')),
      generate(join(lora, 'adapter_model.safetensors'), ['--adapter', lora]),
      forward(join(cacheDir, 'out.safetensors')),
    ]) {
      expect((await refused(argv)).code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
    }
    expect(await readdir(ernie)).not.toContain('inputs.safetensors');
    await unchanged();
  });

  it('finding 1: the inputs file and the image are refused as outputs wherever they are', async () => {
    const dir = await mkdtemp(join(work, 'files-'));
    const inputs = join(dir, 'inputs.safetensors');
    const image = join(dir, 'tiny.png');
    await copyFile(join(ernie, 'cases', 'images', 'inputs.safetensors'), inputs);
    await copyFile(IMAGE, image);
    const [inputsBytes, imageBytes] = [await readFile(inputs), await readFile(image)];
    expect((await refused(forward(inputs, inputs))).code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
    expect((await refused(['preprocess', '--model', ernie, '--image', image, '--prompt', 'hi', '--out', image])).code).toBe(
      'OUTPUT_WOULD_OVERWRITE_INPUT',
    );
    expect((await readFile(inputs)).equals(inputsBytes)).toBe(true);
    expect((await readFile(image)).equals(imageBytes)).toBe(true);
  });

  it('finding 1: preprocess refuses --out onto its own --prompt-file', async () => {
    const file = join(await mkdtemp(join(work, 'prompt-')), 'prompt.txt');
    await writeFile(file, 'Describe this image.');
    const argv = ['preprocess', '--model', ernie, '--image', IMAGE, '--prompt-file', file, '--out', file];
    expect((await refused(argv)).code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
    expect(await readFile(file, 'utf8')).toBe('Describe this image.');
  });

  it('finding 1: a hard link to a model file is the same file (device and inode), refused by name', async () => {
    const alias = join(work, 'alias.safetensors');
    await link(join(ernie, 'model.safetensors'), alias);
    const e = await refused(preprocess(alias));
    expect(e.code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
    expect(e.message).toMatch(/same file as .*model\.safetensors/);
    await unchanged();
  });

  it('finding 1: a symbolic link into the model directory is never written through', async () => {
    const alias = join(work, 'link.safetensors');
    await symlink(join(ernie, 'model.safetensors'), alias);
    expect((await refused(preprocess(alias))).code).toBe('OUTPUT_NOT_REGULAR_FILE');
    expect((await lstat(alias)).isSymbolicLink()).toBe(true);
    // A directory that is a link into the model directory is resolved: the target is inside it.
    const dirLink = join(work, 'model-link');
    await symlink(ernie, dirLink);
    expect((await refused(preprocess(join(dirLink, 'new.safetensors')))).code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
    await unchanged();
  });

  it('finding 1: the real command exits 1 with one clean line naming the code, and the weights keep their bytes', async () => {
    const r = await runBin(preprocess(join(ernie, 'model.safetensors')), { timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^vlmkit: \[OUTPUT_WOULD_OVERWRITE_INPUT\] output .*model\.safetensors is inside .*ernie-tiny, which this command reads/,
    );
    expect(r.stderr).not.toMatch(STACK_LINE);
    expect(r.stdout).toBe('');
    await unchanged();
  });

  it('finding 1: export refuses the model directory, a directory inside it or holding it, and a link in the output to a weight file', async () => {
    for (const out of [ernie, join(ernie, 'onnx'), dirname(ernie)]) {
      const e = await refused(['export', '--model', ernie, '--out', out]);
      expect(e.code).toBe('OUTPUT_WOULD_OVERWRITE_INPUT');
    }
    expect(await readdir(ernie)).not.toContain('onnx');
    // A data file in the output directory that is a link to the checkpoint would be opened and truncated through it.
    const out = await mkdtemp(join(work, 'export-'));
    await symlink(join(ernie, 'model.safetensors'), join(out, 'decoder.onnx.data'));
    expect((await refused(['export', '--model', ernie, '--out', out])).code).toBe('OUTPUT_NOT_REGULAR_FILE');
    const file = join(out, 'a-file');
    await writeFile(file, 'x');
    const notDir = await refused(['export', '--model', ernie, '--out', file]);
    expect([notDir.code, notDir.message]).toEqual([
      'OUTPUT_NOT_DIRECTORY',
      expect.stringMatching(/is a regular file: export writes a directory/),
    ]);
    // The adapter directory is read too.
    expect((await refused(['export', '--model', granite, '--adapter', lora, '--out', join(lora, 'onnx')])).code).toBe(
      'OUTPUT_WOULD_OVERWRITE_INPUT',
    );
    await unchanged();
  });
});

describe('finding 2: --out is written only onto a regular file', () => {
  it('finding 2: a FIFO, a directory and a link to a FIFO are refused before anything runs, and stay what they were', async () => {
    const dir = await mkdtemp(join(work, 'special-'));
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const sub = join(dir, 'sub');
    await mkdir(sub);
    const toFifo = join(dir, 'to-fifo');
    await symlink(fifo, toFifo);
    for (const [out, why] of [
      [fifo, /is a FIFO/],
      [sub, /is a directory/],
      [toFifo, /is a symbolic link/],
    ] as const) {
      for (const argv of [preprocess(out), forward(out), generate(out)]) {
        const e = await refused(argv);
        expect(e.code).toBe('OUTPUT_NOT_REGULAR_FILE');
        expect(e.message).toMatch(why);
      }
    }
    expect((await stat(fifo)).isFIFO()).toBe(true);
    expect((await stat(sub)).isDirectory()).toBe(true);
    expect((await lstat(toFifo)).isSymbolicLink()).toBe(true);
  });

  it('finding 2: a character device (as /dev/full) is refused and stays a device', async (ctx) => {
    // A device node of our own, in a temporary directory: /dev/null's numbers (1, 3), so nothing can be harmed.
    const dev = join(await mkdtemp(join(work, 'dev-')), 'null');
    try {
      execFileSync('mknod', [dev, 'c', '1', '3'], { stdio: 'ignore' });
    } catch {
      ctx.skip(); // creating a device node needs root (CAP_MKNOD)
    }
    const r = await runBin(preprocess(dev));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^vlmkit: \[OUTPUT_NOT_REGULAR_FILE\] output .* is a character device: outputs are written only to regular files/,
    );
    expect((await lstat(dev)).isCharacterDevice()).toBe(true);
  });

  it('a regular file given as --out is replaced whole, with no temporary file left beside it', async () => {
    const dir = await mkdtemp(join(work, 'regular-'));
    const out = join(dir, 'inputs.safetensors');
    await writeFile(out, 'old contents');
    expect(await main(preprocess(out), quiet, { err: quiet })).toBe(0);
    expect((await readFile(out)).subarray(8, 9).toString()).toBe('{');
    expect(await readdir(dir)).toEqual(['inputs.safetensors']);
  });
});
