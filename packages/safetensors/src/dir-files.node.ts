/**
 * A local model directory as `ModelFiles`, and the path entry points of checkpoints (Node only). A file is
 * opened only when it is a regular file (no FIFO, device or directory is ever opened blocking or read) that
 * stays inside the directory, also after following symlinks: a cloned repository's link to /etc/passwd is
 * never read. In huggingface_hub's cache (`models--org--name/snapshots/<rev>/` holding symlinks into
 * `../../blobs/`) a symlink may lead anywhere inside that model's cache folder `models--org--name/`, and
 * nowhere else.
 */
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fail, SafetensorsError } from './errors.js';
import { fileSource } from './file-source.node.js';
import { checkedName } from './names.js';
import type { ByteSource, ModelFiles } from './source.js';
import { type CheckpointFiles, isWeightName, locateWeights } from './weight-files.js';

/** The files of the directory `dir`, by name relative to it ('config.json', 'sub/x.safetensors'). */
export function dirFiles(dir: string): ModelFiles {
  const root = resolve(dir);
  let realRoot: Promise<string> | undefined;
  return {
    root,
    async open(name: string): Promise<ByteSource | undefined> {
      const key = checkedName(root, name);
      const path = resolve(root, key);
      if (!isInside(root, path))
        fail('FILE_OUTSIDE_DIR', `'${name}' points outside it; expected a file inside the model directory ${root}.`, { file: path });
      let source: ByteSource;
      try {
        source = await fileSource(path);
      } catch (err) {
        if (!(err instanceof SafetensorsError) || err.code !== 'FILE_NOT_FOUND') throw err;
        if ((await lstat(path).catch(() => undefined)) === undefined) return undefined;
        return fail('NOT_A_FILE', 'expected a regular file, found a symbolic link to nothing; only regular files are read.', {
          file: path,
        });
      }
      try {
        realRoot ??= realpath(root);
        checkContained(root, await realRoot, key, await realpath(path));
        return source;
      } catch (err) {
        await source.close().catch(() => undefined);
        throw err;
      }
    },
    async list(): Promise<string[]> {
      return (await readdir(root)).sort();
    },
  };
}

/** FILE_OUTSIDE_DIR unless `real` (where `name` leads) is inside `realRoot`, or in this hub snapshot's model folder. */
function checkContained(root: string, realRoot: string, name: string, real: string): void {
  if (isInside(realRoot, real)) return;
  const outside = (how: string): never =>
    fail('FILE_OUTSIDE_DIR', `'${name}' is a symlink to ${real}, ${how}; expected a file inside the model directory ${root}.`, {
      file: join(root, name),
    });
  const hub = hubCacheRoot(realRoot);
  if (hub === undefined) outside('outside it');
  else if (!isInside(hub, real)) outside(`outside the hub cache folder ${hub} of this snapshot`);
}

/**
 * `.../models--org--name` when `dir` is (inside) a huggingface_hub snapshot `.../models--org--name/snapshots/<rev>`,
 * else undefined. `dir` is a real path: the layout is judged after symlinks are followed.
 */
function hubCacheRoot(dir: string): string | undefined {
  for (let d = dir; dirname(d) !== d; d = dirname(d)) {
    const snapshots = dirname(d);
    if (basename(snapshots) === 'snapshots' && basename(dirname(snapshots)).startsWith('models--')) return dirname(snapshots);
  }
  return undefined;
}

function isInside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && !isAbsolute(rel) && rel !== '..' && !rel.startsWith(`..${sep}`);
}

/** What a checkpoint path names: a directory (its files), an index .json in one (read as given), or one file. */
export type CheckpointPath =
  | { readonly path: string; readonly files: ModelFiles; readonly index: string | undefined; readonly source?: undefined }
  | { readonly path: string; readonly source: ByteSource };

export async function locatePath(pathOrDir: string): Promise<CheckpointPath> {
  const path = resolve(pathOrDir);
  const st = await stat(path).catch((cause: NodeJS.ErrnoException) =>
    cause.code === 'ENOENT'
      ? fail('FILE_NOT_FOUND', 'expected a model directory, index .json or .safetensors file here, found nothing.', { file: path, cause })
      : fail('IO_ERROR', `cannot stat: ${cause.message}.`, { file: path, cause }),
  );
  if (st.isDirectory()) return { path, files: dirFiles(path), index: undefined };
  if (path.endsWith('.json')) return { path, files: dirFiles(dirname(path)), index: basename(path) };
  return { path, source: await fileSource(path) };
}

/**
 * The files a load of `pathOrDir` reads, by transformers' rule for a directory (see `Checkpoint`); an index
 * .json or a .safetensors file given directly is read as given. No tensor file's header is read. Every caller
 * that needs "the checkpoint's files" (the graph cache's key, an export's manifest, `vlmkit inspect`) asks here.
 */
export async function checkpointFiles(pathOrDir: string): Promise<CheckpointFiles> {
  const at = await locatePath(pathOrDir);
  if (at.source !== undefined) {
    await at.source.close();
    return { index: undefined, files: [at.path], unread: [] };
  }
  const found = await locateWeights(at.files, at.index);
  await Promise.all(found.sources.map((s) => s.close().catch(() => undefined)));
  const files = found.sources.map((s) => s.name);
  if (at.index !== undefined) return { index: found.index, files, unread: [] };
  const read = new Set<string>([...files, ...(found.index === undefined ? [] : [found.index])]);
  const present = (await readdir(at.path)).filter(isWeightName).sort();
  return { index: found.index, files, unread: present.map((f) => join(at.path, f)).filter((f) => !read.has(f)) };
}
