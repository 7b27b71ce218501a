// Where a command may write its output. A command's output must never replace what it reads (the model's
// weights, its tokenizer, the inputs, the adapter, the graph cache) nor a special file (a device, a FIFO), and
// never write through a symbolic link: the write goes to a temporary file beside the target, which is then
// renamed over it, so a rename onto `/dev/full` or onto `model.safetensors` would replace that file.

import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { describeFileKind } from '@vlmkit/safetensors';
import { ModelError } from './errors.js';

/** The files and directories a command reads; a directory counts with everything under it. */
export type ReadPaths = readonly (string | undefined)[];

// A model directory is a handful of files; the walk that collects what it holds is bounded all the same.
const MAX_WALK_ENTRIES = 20_000;

interface ReadSet {
  /** Real paths of the directories read: nothing may be written inside them. */
  dirs: { given: string; real: string }[];
  /** Real paths of the files read (given directly): nothing may be written to a directory holding one (export). */
  files: { given: string; real: string }[];
  /** `dev:ino` of every file read (under the directories too), so a hard link or a second path is caught. */
  ids: Map<string, string>;
}

function fileId(s: Stats): string {
  return `${s.dev}:${s.ino}`;
}

function inside(path: string, dir: string): boolean {
  const r = relative(dir, path);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
}

async function statOrUndefined(path: string, follow: boolean): Promise<Stats | undefined> {
  try {
    return follow ? await stat(path) : await lstat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** The real path of `path`, which may not exist yet: its nearest existing ancestor resolved, the rest appended. */
async function resolveExisting(path: string): Promise<string> {
  const rest: string[] = [];
  let head = resolve(path);
  for (;;) {
    try {
      return join(await realpath(head), ...rest.reverse());
    } catch {
      if (dirname(head) === head) return resolve(path);
      rest.push(basename(head));
      head = dirname(head);
    }
  }
}

/** What `reads` resolve to; paths that do not exist are skipped (the command reports them itself). */
async function collectReads(reads: ReadPaths): Promise<ReadSet> {
  const set: ReadSet = { dirs: [], files: [], ids: new Map() };
  let budget = MAX_WALK_ENTRIES;
  const walk = async (dir: string, given: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (--budget < 0) return;
      const p = join(dir, entry.name);
      // Symbolic links are followed to their file (a hub cache's snapshot links to its blobs), not into directories.
      const s = await statOrUndefined(p, true);
      if (s === undefined) continue;
      if (s.isDirectory()) {
        if (!entry.isSymbolicLink()) await walk(p, given);
      } else set.ids.set(fileId(s), `${given} (${relative(given, p)})`);
    }
  };
  for (const path of reads) {
    if (path === undefined) continue;
    const s = await statOrUndefined(path, true);
    if (s === undefined) continue;
    const real = await realpath(path);
    if (s.isDirectory()) {
      set.dirs.push({ given: path, real });
      await walk(real, path);
    } else {
      set.files.push({ given: path, real });
      set.ids.set(fileId(s), path);
    }
  }
  return set;
}

/**
 * The target as it is now: absent, or a regular file that is none of the files read. A symbolic link is
 * refused whatever it points to: renaming over it would replace the link, and writing through it would
 * reach whatever it names.
 */
async function checkTarget(given: string, real: string, reads: ReadSet): Promise<void> {
  const s = await statOrUndefined(real, false);
  if (s === undefined) return;
  if (s.isSymbolicLink())
    throw new ModelError(
      'OUTPUT_NOT_REGULAR_FILE',
      `output ${given} is a symbolic link: outputs are never written through one; give the real path`,
    );
  if (!s.isFile())
    throw new ModelError('OUTPUT_NOT_REGULAR_FILE', `output ${given} is ${describeFileKind(s)}: outputs are written only to regular files`);
  const read = reads.ids.get(fileId(s));
  if (read !== undefined)
    throw new ModelError(
      'OUTPUT_WOULD_OVERWRITE_INPUT',
      `output ${given} is the same file as ${read}, which this command reads: choose another output path`,
    );
}

/** The target's real path (its directory resolved, the last name kept), refused when inside a directory read. */
async function realTarget(given: string, reads: ReadSet): Promise<string> {
  const abs = resolve(given);
  let dir: string;
  try {
    dir = await realpath(dirname(abs));
  } catch (e) {
    throw new ModelError('OUTPUT_NOT_DIRECTORY', `output ${given}: its directory cannot be used (${(e as Error).message})`);
  }
  const real = join(dir, basename(abs));
  for (const d of reads.dirs) {
    if (inside(real, d.real))
      throw new ModelError(
        'OUTPUT_WOULD_OVERWRITE_INPUT',
        `output ${given} is inside ${d.given}, which this command reads: write the output elsewhere`,
      );
  }
  return real;
}

/** An output file checked against what the command reads; `write` then replaces it atomically. */
export interface OutputFile {
  /** The path as given (for messages). */
  readonly path: string;
  /**
   * Calls `fill(tmp)` to write a temporary file beside the target, checks the target again (it may have
   * changed since), then renames the temporary file over it. The temporary file is removed on failure.
   */
  write(fill: (tmp: string) => Promise<void>): Promise<void>;
}

/**
 * Checks, before anything is computed, that `path` may receive a command's output: it is not a symbolic link,
 * not a special file or a directory, not inside a directory in `reads`, and not the same file (by device and
 * inode: hard links too) as anything `reads` holds. Throws ModelError OUTPUT_WOULD_OVERWRITE_INPUT,
 * OUTPUT_NOT_REGULAR_FILE or OUTPUT_NOT_DIRECTORY (its directory missing) naming the path.
 */
export async function outputFile(path: string, reads: ReadPaths): Promise<OutputFile> {
  const set = await collectReads(reads);
  const real = await realTarget(path, set);
  await checkTarget(path, real, set);
  return {
    path,
    async write(fill) {
      const tmp = join(dirname(real), `.${basename(real)}.${randomBytes(6).toString('hex')}.tmp`);
      try {
        await fill(tmp);
        await checkTarget(path, real, set);
        await rename(tmp, real);
      } catch (e) {
        await rm(tmp, { force: true });
        throw e;
      }
    },
  };
}

/** An output directory checked against what the command reads; `write` fills it through a staging directory. */
export interface OutputDir {
  readonly path: string;
  /**
   * Calls `fill(staging)` to write the files into a fresh directory inside the output directory, then moves
   * each file it returns (names relative to the staging directory) into place, each checked again as an
   * output file first. The staging directory is removed in any case.
   */
  write<T>(fill: (staging: string) => Promise<{ result: T; files: readonly string[] }>): Promise<T>;
}

/**
 * Checks an output directory (created when absent): a directory, not inside a directory in `reads`, and
 * holding none of them; `names`, the files the command will write there, each pass `outputFile`'s checks.
 * Throws ModelError OUTPUT_WOULD_OVERWRITE_INPUT or OUTPUT_NOT_DIRECTORY naming the path.
 */
export async function outputDir(path: string, reads: ReadPaths, names: readonly string[]): Promise<OutputDir> {
  const set = await collectReads(reads);
  const s = await statOrUndefined(path, true);
  if (s !== undefined && !s.isDirectory())
    throw new ModelError(
      'OUTPUT_NOT_DIRECTORY',
      `output ${path} is ${describeFileKind(s)}: export writes a directory of files; give a directory path`,
    );
  const check = (r: string) => {
    for (const d of [...set.dirs, ...set.files]) {
      if (inside(r, d.real) || inside(d.real, r))
        throw new ModelError(
          'OUTPUT_WOULD_OVERWRITE_INPUT',
          `output ${path} ${inside(r, d.real) ? 'is inside' : 'holds'} ${d.given}, which this command reads: export to a directory of its own`,
        );
    }
  };
  // Checked before it is created, so a refused directory is not left behind.
  check(await resolveExisting(path));
  await mkdir(path, { recursive: true });
  const dir = await realpath(path);
  check(dir);
  for (const name of names) await checkTarget(join(path, name), join(dir, name), set);
  return {
    path,
    async write(fill) {
      const staging = await mkdtemp(join(dir, '.vlmkit-staging-'));
      try {
        const { result, files } = await fill(staging);
        for (const name of files) {
          await checkTarget(join(path, name), join(dir, name), set);
          await rename(join(staging, name), join(dir, name));
        }
        return result;
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
    },
  };
}
