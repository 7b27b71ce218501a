// How the graph cache touches files: stamps that identify a file's bytes without reading them, reads that open
// regular files only (a FIFO or a device put in a cache file's place is refused, never waited on), writes under
// temporary names renamed into place, removals that never follow a link, and where a cached graph's external
// data is named relative to.
import { createHash } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, sep } from 'node:path';
import { onnx } from '@vlmkit/onnx-graph';
import { describeFileKind } from '@vlmkit/safetensors';
import { ModelError } from './errors.js';

const HASH_CHUNK = 4 * 2 ** 20;
/** An entry is a few KB; anything larger in its place is not one. */
const MAX_JSON_BYTES = 16 * 2 ** 20;

/** A cache file as written: its size and SHA-256. */
export interface FileRecord {
  size: number;
  sha256: string;
}

/** What identifies a file's bytes without reading them; ctime changes on every write and cannot be set back. */
export interface Stamp {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  dev: number;
}

export async function stampOf(path: string): Promise<Stamp> {
  const s = await stat(path);
  return { size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs, ino: s.ino, dev: s.dev };
}

export function sameStamp(a: Stamp | undefined, b: Stamp): boolean {
  return a !== undefined && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino && a.dev === b.dev;
}

/**
 * The stamp of a file the cache wrote, or what is wrong with it: missing, or not a regular file (a symlink or
 * a FIFO put in its place is never followed, read or served).
 */
export async function cacheFileStamp(path: string): Promise<Stamp | string> {
  let s: Stats;
  try {
    s = await lstat(path);
  } catch {
    return `${basename(path)} is missing`;
  }
  if (s.isSymbolicLink()) return `${basename(path)} is a symbolic link`;
  if (!s.isFile()) return `${basename(path)} is ${describeFileKind(s)}`;
  return { size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs, ino: s.ino, dev: s.dev };
}

/**
 * sha256 of a whole file in one pass through a reused 4 MiB buffer (bounded memory; measured ~1 GB/s on
 * a 2-core x86 with SHA-NI, where a read stream of fresh chunks gave about half).
 */
export async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  const fd = await openRegular(path);
  try {
    const buf = Buffer.allocUnsafe(HASH_CHUNK);
    for (;;) {
      const { bytesRead } = await fd.read(buf, 0, HASH_CHUNK);
      if (bytesRead === 0) break;
      h.update(buf.subarray(0, bytesRead));
    }
  } finally {
    await fd.close();
  }
  return h.digest('hex');
}

/**
 * Opens `path` for reading only when it is a regular file: non-blocking, so that a FIFO or a device put in its
 * place is refused instead of blocking the load forever.
 */
export async function openRegular(path: string): Promise<FileHandle> {
  const fd = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  if (!(await fd.stat()).isFile()) {
    await fd.close();
    throw new ModelError('BAD_INPUT', `${path} is not a regular file; the graph cache reads and hashes regular files only.`);
  }
  return fd;
}

export async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  try {
    await writeFile(tmp, text, { flag: 'wx' });
    await renameOver(tmp, path);
  } finally {
    await rm(tmp, { force: true }).catch(() => undefined);
  }
}

/**
 * Renames `tmp` to `path`, replacing a file, symlink or FIFO there at once; an empty directory there (something
 * put in place of a cache file) is removed first. Anything else there is refused by name (BAD_CACHE_DIR).
 */
export async function renameOver(tmp: string, path: string): Promise<void> {
  try {
    await rename(tmp, path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
    if (!(await removeFile(path))) {
      throw new ModelError(
        'BAD_CACHE_DIR',
        `graph cache file ${path} cannot be replaced (${await lstat(path).then(describeFileKind, () => 'gone')} that is not empty); remove it, or pass another --cache-dir DIR (cacheDir).`,
      );
    }
    await rename(tmp, path);
  }
}

/** The JSON in `path`; undefined when it is missing, not a regular file, too large for an entry, or not JSON. */
export async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    const fd = await openRegular(path);
    try {
      if ((await fd.stat()).size > MAX_JSON_BYTES) return undefined;
      return JSON.parse(await fd.readFile('utf8')) as T;
    } finally {
      await fd.close();
    }
  } catch {
    return undefined;
  }
}

/** A regular file's bytes (see `openRegular`). */
export async function readRegular(path: string): Promise<Uint8Array> {
  const fd = await openRegular(path);
  try {
    return new Uint8Array(await fd.readFile());
  } finally {
    await fd.close();
  }
}

/**
 * Removes one name: a file, symlink or FIFO (unlinked, never followed), or an empty directory; false when it
 * could not be removed (a directory holding something is left alone).
 */
export async function removeFile(path: string): Promise<boolean> {
  try {
    if ((await lstat(path).catch(() => undefined))?.isDirectory()) await rmdir(path);
    else await rm(path, { force: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes `dir` and its missing parents, one level at a time: Node's recursive mkdir loops forever where a
 * parent exists but refuses children with ENOENT (/proc/self). Each existing level must be a directory.
 */
export async function makeDirectory(dir: string, refuse: (why: string) => ModelError): Promise<void> {
  const missing: string[] = [];
  for (let p = dir; ; p = dirname(p)) {
    let s: Stats;
    try {
      s = await stat(p);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && dirname(p) !== p) {
        missing.push(p);
        continue;
      }
      throw refuse(code === 'ENOTDIR' ? 'a parent of it is a file, not a directory' : `${p}: ${(e as Error).message}`);
    }
    if (!s.isDirectory()) throw refuse(`${p === dir ? 'it' : p} is ${describeFileKind(s)}, not a directory`);
    break;
  }
  for (const p of missing.reverse()) {
    try {
      await mkdir(p);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (
        code === 'EEXIST' &&
        (await stat(p).then(
          (s) => s.isDirectory(),
          () => false,
        ))
      )
        continue;
      throw refuse(`${p} cannot be created (${code ?? (e as Error).message})`);
    }
  }
}

/** The external-data locations a model names. */
export function externalLocations(model: Uint8Array): Set<string> {
  const out = new Set<string>();
  for (const t of onnx.ModelProto.decode(model).graph?.initializer ?? []) {
    const location = t.externalData?.find((x) => x.key === 'location')?.value;
    if (location) out.add(location);
  }
  return out;
}

/** The folder an entry's locations are relative to: the deepest above the cache and the checkpoint files it reads. */
export function entryFolder(root: string, references: Record<string, string>): string {
  return commonFolder([root, ...Object.values(references)]);
}

/** The deepest folder holding every one of `paths` (absolute): ORT resolves all external data against one. */
function commonFolder(paths: readonly string[]): string {
  let parts = paths[0]!.split(sep);
  for (const p of paths.slice(1)) {
    const q = p.split(sep);
    let i = 0;
    while (i < parts.length && i < q.length && parts[i] === q[i]) i++;
    parts = parts.slice(0, i);
  }
  return parts.join(sep) || sep;
}
